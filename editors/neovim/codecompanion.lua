-- acp-harness-agent as a CodeCompanion ACP adapter (CodeCompanion.nvim >= 18, Neovim >= 0.11).
-- A complete adapter of its own (not an extension of gemini_cli, whose command, key and auth method would
-- leak in). Put this in your CodeCompanion setup; the API key comes from the environment or api_key_file.
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_agent = function()
        local helpers = require("codecompanion.adapters.acp.helpers")
        return {
          name = "acp_agent",
          formatted_name = "acp-harness-agent",
          type = "acp",
          roles = { llm = "assistant", user = "user" },
          opts = { vision = true },
          commands = {
            default = { "acp-harness-agent" },
          },
          defaults = {
            mcpServers = {},
            timeout = 20000,
            -- Applied by category after the session starts (values or their names).
            session_config_options = { mode = "default" },
          },
          -- These override the same settings in config.toml.
          env = {
            ACP_AGENT_PROVIDER = "anthropic",
            ACP_AGENT_MODEL = "claude-sonnet-4-5",
          },
          parameters = {
            protocolVersion = 1,
            clientCapabilities = { fs = { readTextFile = true, writeTextFile = true } },
            clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" },
          },
          handlers = {
            setup = function(self)
              return true
            end,
            -- acp-harness-agent needs no login step: the model is configured by env or config.toml.
            auth = function(self)
              return true
            end,
            form_messages = function(self, messages, capabilities)
              return helpers.form_messages(self, messages, capabilities)
            end,
            on_exit = function(self, code) end,
          },
        }
      end,
    },
  },
  interactions = {
    chat = { adapter = "acp_agent" },
  },
})
