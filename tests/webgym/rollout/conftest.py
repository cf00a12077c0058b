from tests.fixture_site import secret, site  # noqa: F401 (fixtures)
