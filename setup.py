"""Copies the top-level ``sql_templates/`` and ``migrations/`` into the built package
(``sqlanon/sql_templates``, ``sqlanon/migrations``); everything else is in pyproject.toml."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = {"sql_templates": ["*/*.sql"], "migrations": ["*.py", "*.mako", "versions/*.py"]}


class BuildPy(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them in the checkout (sqlanon/resources.py)
        for name, patterns in DATA.items():
            for pattern in patterns:
                for src in sorted(Path(name).glob(pattern)):
                    dst = Path(self.build_lib, "sqlanon", src)
                    self.mkpath(str(dst.parent))
                    self.copy_file(str(src), str(dst))


setup(cmdclass={"build_py": BuildPy})
