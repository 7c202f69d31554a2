-- acp-agent as a CodeCompanion ACP adapter (CodeCompanion.nvim >= 17 with ACP support).
-- Put this in your CodeCompanion setup; the API key comes from the environment or api_key_file.
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_agent = function()
        return require("codecompanion.adapters").extend("gemini_cli", {
          name = "acp_agent",
          formatted_name = "acp-agent",
          commands = {
            default = { "acp-agent" },
          },
          defaults = {
            mcpServers = {},
            timeout = 20000,
          },
          env = {
            ACP_AGENT_PROVIDER = "anthropic",
            ACP_AGENT_MODEL = "claude-sonnet-4-5",
          },
          handlers = {
            -- acp-agent needs no login step: the model is configured by env or config.toml.
            auth = function(self)
              return true
            end,
          },
        })
      end,
    },
  },
  strategies = {
    chat = { adapter = "acp_agent" },
  },
})
