"""What the model knows of the project and the user: the system prompt and its environment block, project
instructions, skills, custom slash commands, the hooks, compaction and the updates between turns, and the
short-lived helper processes (hooks, ``git``) they run.

A folder of ``acp_agent.coding`` (no API of its own): the assembly at the top of ``coding`` imports its
modules."""
