"""How the coding tools look in the editor: the file tools' views and the ``shell`` call's.

A folder of ``acp_agent.coding`` (no API of its own): the assembly at the top of ``coding`` imports its
modules."""
