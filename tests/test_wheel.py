"""The wheel carries the top-level ``sql_templates/`` and ``migrations/``: built from the
repository, installed into a fresh virtual environment outside it, it creates the catalog and
answers a query with k-anonymous rows — from the installed package, not from the checkout."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: what building the wheel reads (pyproject.toml names the readme and license)
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "sqlanon", "sql_templates",
           "migrations"]

SCRIPT = textwrap.dedent("""
    import json, sqlite3, subprocess, sys
    from pathlib import Path
    import sqlanon
    from sqlanon.catalog.migrate import SCRIPTS
    from sqlanon.sql.templates import ROOT

    db = Path("clinic.sqlite").resolve()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE patients (age INTEGER, zip TEXT, disease TEXT)")
    con.executemany("INSERT INTO patients VALUES (?, ?, ?)",
                    [(20 + i % 40, f"{10100 + i % 7}", ["flu", "cold", "hiv"][i % 3]) for i in range(120)])
    con.commit()
    con.close()
    url = f"sqlite:///{db}"
    upgrade = subprocess.run([str(Path(sys.executable).parent / "sqlanon"), "db", "upgrade", "--db", url],
                             capture_output=True, text=True)
    policy = {"tables": {"patients": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20, 40]},
                              "zip": {"type": "mask", "levels": [1, 2, 3]}},
        "sensitive": {"disease": {"type": "categorical"}},
        "privacy": {"k": 5}}}}
    with sqlanon.connect(url, policy) as s:
        res = s.execute("SELECT age, zip, disease FROM patients")
    con = sqlite3.connect(db)
    releases = con.execute("SELECT count(*) FROM sqlanon_releases").fetchone()[0]
    print(json.dumps({"module": sqlanon.__file__, "templates": str(ROOT), "migrations": str(SCRIPTS),
                      "upgrade": [upgrade.returncode, upgrade.stdout + upgrade.stderr],
                      "rows": [list(r) for r in res.rows], "releases": releases}))
""")


def _build(out: Path, tmp: Path) -> Path:
    """The repository's wheel, built from a copy of what it reads (the checkout stays as it is).
    Without network where the build backend is installed here; otherwise pip fetches it."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    offline = (importlib.util.find_spec("wheel") is not None
               or importlib.util.find_spec("setuptools.command.bdist_wheel") is not None)
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)]
    subprocess.run(cmd + (["--no-build-isolation"] if offline else []), check=True, cwd=tmp)
    (wheel,) = out.glob("sqlanon-*.whl")
    return wheel


def test_installed_wheel_creates_the_catalog_and_anonymizes(tmp_path):
    wheel = _build(tmp_path / "dist", tmp_path)

    names = set(zipfile.ZipFile(wheel).namelist())
    for top in ("sql_templates", "migrations"):
        shipped = {f"sqlanon/{p.relative_to(REPO).as_posix()}" for p in (REPO / top).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}
        assert shipped and shipped <= names, f"missing from the wheel: {sorted(shipped - names)}"

    venv = tmp_path / "venv"
    # the dependencies come from this interpreter's site-packages, pip too (no network)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
                   check=True, cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "run.py").write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run([str(python), "run.py"], check=False, cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])

    package = Path(out["module"]).parent
    assert package.is_relative_to(venv) and not package.is_relative_to(REPO), out["module"]
    assert Path(out["templates"]) == package / "sql_templates"
    assert Path(out["migrations"]) == package / "migrations"
    assert out["upgrade"][0] == 0 and "catalog at revision" in out["upgrade"][1], out["upgrade"]
    assert out["releases"] == 1
    rows = out["rows"]
    assert rows, "nothing released"
    classes: dict[tuple, int] = {}
    for age, zip_code, _ in rows:
        classes[(age, zip_code)] = classes.get((age, zip_code), 0) + 1
    assert min(classes.values()) >= 5, classes
    raw = {(20 + i % 40, f"{10100 + i % 7}") for i in range(120)}
    assert any((age, zip_code) not in raw for age, zip_code, _ in rows), "nothing generalized"
