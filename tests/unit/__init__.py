"""The fast layer: tests that run inside the pytest process and launch no browser and no server
(fake providers, in-process registries and catalogues, pure functions). ``tests/unit/conftest.py``
refuses a Chromium or server launch here, so a test that needs one belongs in ``tests/`` or
``tests/e2e/``. Run them alone before a commit: ``./scripts/test.sh tests/unit``."""
