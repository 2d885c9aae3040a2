"""Package discovery, the one thing pyproject.toml cannot say: the folders service/ and rest_bridge/ install under
the ``ovserve`` namespace (``ovserve.service``, ``ovserve.rest_bridge``), so that no generic top-level name such as
``service`` lands in site-packages beside a user's own. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = ("service", "rest_bridge")  # clients/ is the ovserve-client distribution's (clients/pyproject.toml)

setup(
    packages=[f"ovserve.{name}" for name in find_packages(include=[f"{folder}*" for folder in FOLDERS])],
    package_dir={f"ovserve.{folder}": folder for folder in FOLDERS},
)
