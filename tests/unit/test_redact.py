"""Secrets are masked in events and output before anything stores or prints them."""

from __future__ import annotations

from swell.events import models as ev
from swell.events.redact import MASK, RedactedOutput, Redactor
from swell.streaming import OutputChunk

TOKEN = "s3cr3t-value-of-a-token"
GITHUB = "ghp_" + "a1B2" * 9


def test_environment_secrets_are_masked_by_name() -> None:
    redactor = Redactor.from_environ(
        {"MY_API_KEY": TOKEN, "HOME": "/home/someone-long", "DEBUG_TOKEN": "1", "PATH": "/bin"}
    )
    assert redactor.text(f"curl -H 'x: {TOKEN}'") == f"curl -H 'x: {MASK}'"
    assert redactor.text("/home/someone-long") == "/home/someone-long"  # not a secret name
    assert redactor.text("1 2 3") == "1 2 3"  # too short to mask


def test_known_shapes_are_masked_without_being_known() -> None:
    redactor = Redactor()
    key = "sk-ant-" + "x" * 40
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    text = f"token {GITHUB} key {key} aws AKIAABCDEFGHIJKLMNOP\n{pem}\nend"
    assert redactor.text(text) == f"token {MASK} key {MASK} aws {MASK}\n{MASK}\nend"


def test_events_are_copied_with_their_nested_text_masked() -> None:
    redactor = Redactor([TOKEN])
    finished = ev.StepFinished(
        run_id="r", step_id="s", visit=1, outcome="failure", error=f"auth {TOKEN} refused"
    )
    review = ev.ReviewCompleted(
        run_id="r",
        step_id="s",
        visit=1,
        index=0,
        reviewer="rev",
        issues=[ev.ReviewIssue(severity="major", detail=f"leaks {TOKEN}")],
    )
    plain = ev.StepStarted(run_id="r", step_id="s", visit=1, kind="command", detail="make")
    out = redactor.events([finished, review, plain])
    assert out[0].error == f"auth {MASK} refused"  # type: ignore[attr-defined]
    assert out[1].issues[0].detail == f"leaks {MASK}"  # type: ignore[attr-defined]
    assert out[2] is plain
    assert finished.error == f"auth {TOKEN} refused"  # the original is left alone


def test_output_chunks_are_masked_on_their_way_to_the_sink() -> None:
    got: list[OutputChunk] = []

    class Sink:
        def write_output(self, chunks: list[OutputChunk]) -> None:
            got.extend(chunks)

        def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
            pass

    RedactedOutput(Sink(), Redactor([TOKEN])).write_output(
        [OutputChunk("r", "s", 1, "stdout", 1, "t", f"echo {TOKEN}\n")]
    )
    assert [c.text for c in got] == [f"echo {MASK}\n"]
