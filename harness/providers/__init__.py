"""Model providers over HTTP: OpenAI Chat Completions and Responses, Anthropic Messages.

``build_model`` makes one by provider name from explicit arguments; ``RetryModel`` retries rate-limited calls.
"""

from .anthropic import Messages
from .factory import DEFAULT_URLS, PROVIDERS, build_model, list_models
from .openai import ChatCompletions, Responses
from .retry import RetryModel

__all__ = [
    "DEFAULT_URLS",
    "PROVIDERS",
    "ChatCompletions",
    "Messages",
    "Responses",
    "RetryModel",
    "build_model",
    "list_models",
]
