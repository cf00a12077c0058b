"""The project's worlds through other projects' APIs (BrowserGym: browsergym.py, the optional `browsergym` extra)."""
