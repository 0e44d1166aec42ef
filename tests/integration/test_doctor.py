"""`swell doctor`: agent CLIs and versions, credentials, the local model, git, the store."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from agent_clis import cli_path
from conftest import swell
from postgres_server import PostgresServer

CLIS = ("claude", "codex", "gemini", "opencode")


def clean_env(tmp_path: Path, path: str, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_"))
    }
    return {**env, "HOME": str(home), "PATH": path, **extra}


def use_claude(project: Path) -> None:
    """The examples' replayed personas become real claude ones."""
    text = (project / "wave.yaml").read_text().replace("adapter: replay", "adapter: claude")
    (project / "wave.yaml").write_text(text)


def line_with(out: str, status: str, *parts: str) -> bool:
    """A line of `swell doctor` with this status word first and these parts in order."""
    for line in out.splitlines():
        if line.split(" ", 1)[0] != status:
            continue
        at = 0
        for part in parts:
            at = line.find(part, at)
            if at < 0:
                break
            at += len(part)
        else:
            return True
    return False


def checks(result_stdout: str) -> dict[str, dict[str, object]]:
    data = json.loads(result_stdout)
    return {f"{c['area']}:{c['name']}": c for c in data["checks"]}


def test_doctor_on_the_examples_is_happy_without_agent_clis(project: Path, tmp_path: Path) -> None:
    result = swell("doctor", cwd=project, env=clean_env(tmp_path, "/usr/bin:/bin"))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert line_with(out, "ok", "project", "wave.yaml")
    for cli in CLIS:  # not used by the examples: reported, not failed
        assert line_with(out, "-", "agent CLI", cli, "(not used here)")
    assert line_with(out, "ok", "local model", "local", "SmolLM2")
    assert line_with(out, "ok", "git", "git version")
    assert "does not exist yet (the first run creates it)" in out
    assert "everything this project uses is here" in out


def test_doctor_finds_the_real_agent_clis_and_their_versions(project: Path, tmp_path: Path) -> None:
    bin_dir = cli_path(CLIS[0]).parent  # skips, or fails under SWELL_REQUIRE_AGENT_CLIS
    for cli in CLIS:
        cli_path(cli)
    use_claude(project)
    env = clean_env(tmp_path, f"{bin_dir}:/usr/bin:/bin", ANTHROPIC_API_KEY="sk-test")
    result = swell("doctor", "-o", "json", cwd=project, env=env, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    found = checks(result.stdout)
    for cli in CLIS:
        check = found[f"agent CLI:{cli}"]
        assert check["status"] == "ok", check
        assert str(bin_dir / cli) in str(check["detail"])
    assert "Claude Code" in str(found["agent CLI:claude"]["detail"])
    assert found["credentials:claude"]["status"] == "ok"
    assert found["credentials:claude"]["detail"] == "$ANTHROPIC_API_KEY"


def test_missing_cli_and_key_the_project_uses_fail_with_fixes(
    project: Path, tmp_path: Path
) -> None:
    use_claude(project)
    result = swell("doctor", cwd=project, env=clean_env(tmp_path, "/usr/bin:/bin"))
    assert result.returncode == 1
    out = result.stdout
    assert line_with(out, "MISSING", "agent CLI", "claude", "`claude` not found")
    assert "fix: npm install -g @anthropic-ai/claude-code" in out
    assert line_with(out, "MISSING", "credentials", "claude", "no login found")
    assert "fix: export ANTHROPIC_API_KEY=..., or run `claude` once and log in" in out
    assert "2 problems found" in out


def test_a_binary_configured_in_wave_yaml_is_the_one_checked(project: Path, tmp_path: Path) -> None:
    bin_dir = cli_path("codex").parent  # skips, or fails under SWELL_REQUIRE_AGENT_CLIS
    text = (
        (project / "wave.yaml")
        .read_text()
        .replace(
            "adapters:\n", f"adapters:\n  fast:\n    type: codex\n    binary: {bin_dir / 'codex'}\n"
        )
    )
    (project / "wave.yaml").write_text(text.replace("adapter: replay", "adapter: fast"))
    env = clean_env(tmp_path, "/usr/bin:/bin", OPENAI_API_KEY="sk-test")
    result = swell("doctor", "-o", "json", cwd=project, env=env, timeout=120)
    found = checks(result.stdout)
    assert found["agent CLI:codex (adapters.fast)"]["status"] == "ok"
    assert "codex-cli" in str(found["agent CLI:codex (adapters.fast)"]["detail"])
    assert found["credentials:fast (codex)"]["detail"] == "$OPENAI_API_KEY"
    assert result.returncode == 0, result.stdout


def test_doctor_checks_the_store(project: Path, isolated_state: Path, tmp_path: Path) -> None:
    env = clean_env(tmp_path, "/usr/bin:/bin")
    assert swell("run", "loop", cwd=project).returncode == 0
    good = swell("doctor", cwd=project, env=env)
    assert "1 runs, integrity ok, migrations current" in good.stdout
    # a store from a newer swell
    db = sqlite3.connect(isolated_state / "state.db")
    db.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (999, 'now')")
    db.commit()
    db.close()
    newer = swell("doctor", cwd=project, env=env)
    assert newer.returncode == 1
    assert line_with(newer.stdout, "ERROR", "store", "is newer than this swell's")
    # a damaged file
    (isolated_state / "state.db").write_bytes(b"not a database" * 100)
    for leftover in ("state.db-wal", "state.db-shm"):
        (isolated_state / leftover).unlink(missing_ok=True)
    broken = swell("doctor", cwd=project, env=env)
    assert broken.returncode == 1
    assert line_with(broken.stdout, "ERROR", "store")
    assert "fix: move" in broken.stdout


def test_doctor_outside_a_project(tmp_path: Path) -> None:
    result = swell("doctor", cwd=tmp_path)
    assert result.returncode == 1
    assert line_with(result.stdout, "ERROR", "project", "no wave.yaml")
    assert "fix: run swell in a project directory" in result.stdout


def test_doctor_checks_the_store_swell_will_use_not_the_local_one(
    project: Path, tmp_path: Path
) -> None:
    """An unreachable Postgres named by $SWELL_STORE, or by runtime.store in wave.yaml,
    is one ERROR line with its fix (and never its password), not the local state.db."""
    url = "postgresql://swell:hunter2@127.0.0.1:1/x"
    env = clean_env(tmp_path, "/usr/bin:/bin", SWELL_STORE=url)
    result = swell("doctor", cwd=project, env=env)
    assert result.returncode == 1, result.stdout
    assert line_with(
        result.stdout, "ERROR", "store", "postgres",
        "cannot reach postgresql://swell:***@127.0.0.1:1/x (from $SWELL_STORE)",
    )  # fmt: skip
    assert "fix: start the Postgres server, or fix the URL in $SWELL_STORE" in result.stdout
    assert "state.db" not in result.stdout and "everything this project uses" not in result.stdout
    assert "hunter2" not in result.stdout + result.stderr
    text = (project / "wave.yaml").read_text()
    assert text.count("\nruntime:\n") == 1
    (project / "wave.yaml").write_text(
        text.replace("\nruntime:\n", "\nruntime:\n  store: postgresql://swell@127.0.0.1:1/x\n")
    )
    configured = swell(
        "doctor", "-o", "json", cwd=project, env=clean_env(tmp_path, "/usr/bin:/bin")
    )
    assert configured.returncode == 1
    store = checks(configured.stdout)["store:postgres"]
    assert store["status"] == "error" and "(from runtime.store in wave.yaml)" in str(
        store["detail"]
    )


def test_doctor_over_a_real_postgres_store(
    project: Path, tmp_path: Path, postgres_server: PostgresServer
) -> None:
    import psycopg

    url = postgres_server.fresh_schema()
    schema = url.rpartition("%3D")[2]
    env = clean_env(tmp_path, "/usr/bin:/bin", SWELL_STORE=url)

    def doctor(store_url: str) -> tuple[int, str]:
        result = swell("doctor", cwd=project, env={**env, "SWELL_STORE": store_url})
        return result.returncode, result.stdout

    code, out = doctor(url)  # reachable, nothing created yet: the first run will
    assert code == 0, out
    assert line_with(out, "ok", "store", "postgres", f"schema {schema} has no swell tables yet")
    assert swell("run", "loop", cwd=project, env=env).returncode == 0
    code, out = doctor(url)
    assert code == 0, out
    assert line_with(
        out, "ok", "store", "postgres", f"1 runs in schema {schema}, migrations current, writable"
    )
    # a user who may read swell's tables but not write them
    with psycopg.connect(postgres_server.url, autocommit=True) as db:
        db.execute(f"CREATE ROLE reader_{schema} LOGIN".encode())
        db.execute(f"GRANT USAGE ON SCHEMA {schema} TO reader_{schema}".encode())
        db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO reader_{schema}".encode())
    code, out = doctor(url.replace("//swell@", f"//reader_{schema}@"))
    assert code == 1
    assert line_with(out, "ERROR", "store", "postgres", f"reader_{schema} may not write: DELETE on")
    assert f"fix: GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema}" in out
    # a search_path naming no schema
    code, out = doctor(url.replace(f"%3D{schema}", "%3Dnowhere"))
    assert code == 1
    assert line_with(out, "ERROR", "store", "postgres", "search_path names no schema that exists")
    # a database a newer swell migrated
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("INSERT INTO schema_migrations (version) VALUES (999)")
    code, out = doctor(url)
    assert code == 1
    assert line_with(out, "ERROR", "store", "postgres", "schema version 999 is newer")
    assert "fix: upgrade swell" in out
