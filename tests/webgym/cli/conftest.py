"""The fixtures the command groups' tests share with the tests of the packages they drive."""

from tests.webgym.llm.conftest import llm, make_llm, server  # noqa: F401 (fixtures)
from tests.webgym.sites.conftest import shipped  # noqa: F401 (fixture)
