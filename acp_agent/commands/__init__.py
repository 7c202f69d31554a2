"""The command line's subcommands (``doctor``, ``setup``, ``permissions``, ``sandbox``, ``trust``,
``sessions``), one module each with ``add_arguments(parser)`` and ``main(args, config) -> int``.

``acp_agent.cli.COMMANDS`` names them; the CLI imports a subcommand's module only when the command line
names it. Nothing here is imported by the stdio agent."""
