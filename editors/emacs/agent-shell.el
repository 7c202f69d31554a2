;;; acp-agent for agent-shell (https://github.com/xenodium/agent-shell), Emacs 29.1 or later.
;; Evaluate this (or put it in your init file), then M-x acp-agent-shell.

(require 'agent-shell)

(defun acp-agent-shell-config ()
  "An agent-shell configuration for acp-agent."
  (agent-shell-make-agent-config
   :identifier 'acp-agent
   :mode-line-name "acp-agent"
   :buffer-name "acp-agent"
   :shell-prompt "acp-agent> "
   :shell-prompt-regexp "acp-agent> "
   :default-session-mode-id (lambda () "default")
   :client-maker (lambda (buffer)
                   ;; The ACP_AGENT_* variables here override the same settings in config.toml.
                   (agent-shell--make-acp-client
                    :command "acp-agent"
                    :command-params '()
                    :environment-variables '("ACP_AGENT_PROVIDER=openai"
                                             "ACP_AGENT_MODEL=gpt-4.1")
                    :context-buffer buffer))))

(defun acp-agent-shell ()
  "Start an agent-shell session with acp-agent."
  (interactive)
  (agent-shell-start :config (acp-agent-shell-config)))

(add-to-list 'agent-shell-agent-configs (acp-agent-shell-config))
