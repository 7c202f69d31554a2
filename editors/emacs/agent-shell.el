;;; acp-harness-agent for agent-shell (https://github.com/xenodium/agent-shell), Emacs 29.1 or later.
;; Evaluate this (or put it in your init file), then M-x acp-harness-agent-shell.

(require 'agent-shell)

(defun acp-harness-agent-shell-config ()
  "An agent-shell configuration for acp-harness-agent."
  (agent-shell-make-agent-config
   :identifier 'acp-harness-agent
   :mode-line-name "acp-harness-agent"
   :buffer-name "acp-harness-agent"
   :shell-prompt "acp-harness-agent> "
   :shell-prompt-regexp "acp-harness-agent> "
   :default-session-mode-id (lambda () "default")
   :client-maker (lambda (buffer)
                   ;; The ACP_AGENT_* variables here override the same settings in config.toml.
                   (agent-shell--make-acp-client
                    :command "acp-harness-agent"
                    :command-params '()
                    :environment-variables '("ACP_AGENT_PROVIDER=openai"
                                             "ACP_AGENT_MODEL=gpt-4.1")
                    :context-buffer buffer))))

(defun acp-harness-agent-shell ()
  "Start an agent-shell session with acp-harness-agent."
  (interactive)
  (agent-shell-start :config (acp-harness-agent-shell-config)))

(add-to-list 'agent-shell-agent-configs (acp-harness-agent-shell-config))
