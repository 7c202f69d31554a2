"""Model providers over HTTP: OpenAI Chat Completions and Responses, Anthropic Messages.

``build_model`` makes one by provider name from explicit arguments; ``RetryModel`` retries rate-limited calls.
"""

from . import _clients
from .anthropic import Messages
from .factory import DEFAULT_URLS, PROVIDERS, build_model, list_models
from .openai import ChatCompletions, Responses
from .retry import RetryModel

keep_idle_clients = _clients.keep_idle_clients  # the process keeps its idle connections (the CLI)

__all__ = [
    "DEFAULT_URLS",
    "PROVIDERS",
    "ChatCompletions",
    "Messages",
    "Responses",
    "RetryModel",
    "build_model",
    "keep_idle_clients",
    "list_models",
]
