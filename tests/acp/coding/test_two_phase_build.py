"""The coding factory's set-up in typed halves: ``prepare``'s own type goes to ``finish`` (the session
layer only hands it on), and the parts built before the controls see them through the link once bound."""

from __future__ import annotations

from acp_agent.coding import coding_factory
from acp_agent.coding._prepare import Prepared
from acp_agent.coding.permissions._gate import LinkedControls, SessionLink
from acp_agent.session._setup import PreparingFactory


def test_the_coding_factory_prepares_its_own_type_for_its_finish() -> None:
    factory: PreparingFactory[Prepared] = coding_factory({}, environ={})  # pyright checks the halves' types
    assert isinstance(factory, PreparingFactory)


class _Controls:
    async def send_commands(self) -> None:
        return None

    def facts(self) -> None:
        return None

    def current_model(self) -> None:
        return None


def test_a_link_has_no_controls_until_the_second_phase_binds_them() -> None:
    link = SessionLink()
    assert link.controls is None
    controls: LinkedControls = _Controls()
    link.bind_controls(controls)
    assert link.controls is controls
