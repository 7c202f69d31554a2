"""The models of a coding session: the model list and its cache, each model's facts and price, the
thought level, prompt-cache options, the side model and the usage meter.

A folder of ``acp_agent.coding`` (no API of its own): the assembly at the top of ``coding`` imports its
modules."""
