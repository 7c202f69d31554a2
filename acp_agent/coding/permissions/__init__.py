"""The coding agent's permissions: the session modes and their policies, confinement to the project, the
permission requests and their "always" answers, project trust, the sandbox's choices and plan mode.

A folder of ``acp_agent.coding`` (no API of its own): the assembly at the top of ``coding`` imports its
modules."""
