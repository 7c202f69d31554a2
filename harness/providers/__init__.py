"""Model providers over HTTP: OpenAI Chat Completions and Responses, Anthropic Messages.

``build_model`` makes one from the agent's settings; ``RetryModel`` retries rate-limited calls.
"""

from .anthropic import Messages
from .factory import PROVIDERS, build_model, list_models, resolve
from .openai import ChatCompletions, Responses
from .retry import RetryModel

__all__ = [
    "PROVIDERS",
    "ChatCompletions",
    "Messages",
    "Responses",
    "RetryModel",
    "build_model",
    "list_models",
    "resolve",
]
