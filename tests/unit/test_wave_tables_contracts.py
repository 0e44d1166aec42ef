"""Wave's contract test tables (internal/contract/*_test.go), mirrored through swell's
real contracts: each case writes our own document into a workspace and checks what
the contract says. Case ids name the Wave test (`FILE:Test/row`); docs/conformance.md,
"Wave's test tables", counts them and lists the deliberate differences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wave_tables import Workspace

from swell.contracts.base import AgentAnswer, AgentCall, RunAgent
from swell.contracts.registry import default_contract_types
from swell.contracts.review_prompt import MalformedReview, parse_answer

ANY: dict[str, Any] = {}  # a schema every JSON value meets
PAIR = {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}
DOC = ".agents/output/doc.json"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def _schema_check(
    ws: Workspace, text: str, schema: Any = ANY, **settings: Any
) -> tuple[bool, str, list[str]]:
    ws.write(DOC, text)
    result = ws.check({"type": "json_schema", "schema": schema, "source": DOC, **settings})
    return result.passed, result.error or "", list(result.details.get("recovered", []))


# ------------------------------------------------ jsonschema_recovery_test.go: repairs
R = "contract/jsonschema_recovery_test.go:"
# (id, text, recovery_level, passes, a word of what recovery says it did)
RECOVERY = [
    (R + "TestParseWithRecovery_ValidJSON", '{"key": "v"}', None, True, None),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/trailing_commas",
        '{"key": "v",}',
        "conservative",
        True,
        "trailing commas",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/markdown_code_block",
        '```json\n{"key": "v"}\n```',
        "conservative",
        True,
        "code block",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/AI_preamble_text",
        'Here is what I found in the repository:\n{"key": "v"}',
        "conservative",
        True,
        "text around",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/single-line_comments",
        '{\n// the key\n"key": "v"\n}',
        "conservative",
        True,
        "comments",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/unquoted_keys_with_progressive_recovery",
        '{key: "v", size: 3}',
        "progressive",
        True,
        "bare keys",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/single_quotes_with_progressive_recovery",
        "{'key': 'v'}",
        "progressive",
        True,
        "single-quoted",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/missing_commas_between_properties",
        '{"key": "v" "other": "w"}',
        "progressive",
        True,
        "missing commas",
    ),
    (
        R + "TestParseWithRecovery_RecoveryStrategies/unbalanced_braces_with_aggressive_recovery",
        '{"key": "v"',
        "aggressive",
        True,
        "unbalanced",
    ),
    (
        R + "TestParseWithRecovery_AllRecoveryFails",
        "nothing here resembles a document",
        "aggressive",
        False,
        None,
    ),
    (
        R + "TestNewJSONRecoveryParser_Defaults/progressive_by_default",
        '{key: "v"}',
        None,
        True,
        "bare keys",
    ),
    (
        R + "TestRecoveryLevel_StrategyCounts/conservative_lacks_progressive",
        '{key: "v"}',
        "conservative",
        False,
        None,
    ),
    (
        R + "TestRecoveryLevel_StrategyCounts/progressive_lacks_aggressive",
        '{"key": "v"',
        "progressive",
        False,
        None,
    ),
    (
        R + "TestExtractFromMarkdown_Variations/json_fenced_block",
        'Result\n```json\n{"key": "v"}\n```\nDone',
        "conservative",
        True,
        "code block",
    ),
    (
        R + "TestExtractFromMarkdown_Variations/plain_fenced_block",
        'Result\n```\n{"key": "v"}\n```\nDone',
        "conservative",
        True,
        "code block",
    ),
    (
        R + "TestExtractFromMarkdown_Variations/inline_code",
        'It is `{"key": "v"}`',
        "conservative",
        True,
        None,
    ),
    (
        R + "TestExtractFromMarkdown_Variations/no_markdown",
        "plain words only",
        "conservative",
        False,
        None,
    ),
    (
        R + "TestExtractFromAIExplanation_ColonFallback",
        'The verdict: {"key": "v"}',
        "conservative",
        True,
        "text around",
    ),
    (
        R + "TestHashCommentRemoval",
        '# written by the agent\n{"key": "v"}',
        "conservative",
        True,
        None,
    ),
    (
        R + "TestMultiLineCommentRemoval",
        '{/* the key */ "key": "v"}',
        "conservative",
        True,
        "comments",
    ),
    (R + "TestParseWithRecovery_ValidArray", "[4, 5, 6]", "conservative", True, None),
]


@pytest.mark.parametrize(
    ("text", "level", "passes", "said"), [c[1:] for c in RECOVERY], ids=[c[0] for c in RECOVERY]
)
def test_recovery(
    ws: Workspace, text: str, level: str | None, passes: bool, said: str | None
) -> None:
    settings = {"recovery_level": level, "allow_recovery": True} if level else {}
    ok, error, recovered = _schema_check(ws, text, **settings)
    assert ok is passes, error
    if said:
        assert any(said in step for step in recovered), recovered
    if not passes:
        assert "not valid JSON" in error


# ----------------------------------- jsonschema_cleaner_test.go: comments, commas, prose
C = "contract/jsonschema_cleaner_test.go:"
CLEANER = [
    (C + "TestJSONCleaner_CleanJSONOutput/already_valid_JSON", '{"key":"v","n":1}', True),
    (C + "TestJSONCleaner_CleanJSONOutput/trailing_comma", '{"key":"v",}', True),
    (
        C + "TestJSONCleaner_CleanJSONOutput/multiple_trailing_commas",
        '{"key":"v","a":[1,2,]}',
        True,
    ),
    (C + "TestJSONCleaner_CleanJSONOutput/single_line_comments", '{"key":"v"} // done', True),
    (C + "TestJSONCleaner_CleanJSONOutput/multiline_comments", '{"key":"v" /* done */}', True),
    (
        C + "TestJSONCleaner_CleanJSONOutput/mixed_comments_and_trailing_commas",
        '{"key":"v", // why\n"a":[1,2,], /* more */ }',
        True,
    ),
    (
        C + "TestJSONCleaner_CleanJSONOutput/newlines_preserved_in_strings",
        '{"key":"one\\ntwo // not a comment"}',
        True,
    ),
    (C + "TestJSONCleaner_CleanJSONOutput/invalid_JSON_cannot_be_fixed", "{what is this}", False),
    (C + "TestJSONCleaner_PreservesMultilineStrings", '{\n "key": "a\\nb"\n}', True),
    (C + "TestJSONCleaner_IsValidJSON/valid_object", '{"key":"v"}', True),
    (C + "TestJSONCleaner_IsValidJSON/valid_array", "[7,8]", True),
    (C + "TestJSONCleaner_IsValidJSON/valid_primitive", '"text"', True),
    (C + "TestJSONCleaner_IsValidJSON/invalid_object", "{nope}", False),
    (
        C + "TestJSONCleaner_ExtractJSONFromText/JSON_with_preceding_text",
        'My analysis: {"key":"v"}',
        True,
    ),
    (
        C + "TestJSONCleaner_ExtractJSONFromText/JSON_with_trailing_text",
        '{"key":"v"} is the answer',
        True,
    ),
    (
        C + "TestJSONCleaner_ExtractJSONFromText/nested_JSON_with_text",
        'So: {"key":"v","in":{"x":1}}. End.',
        True,
    ),
    (C + "TestJSONCleaner_ExtractJSONFromText/JSON_array_with_text", "Sizes: [3,4] end", True),
    (C + "TestJSONCleaner_ExtractJSONFromText/no_JSON_in_text", "no document here", False),
    (
        C + "TestJSONCleaner_ExtractJSONFromText/malformed_JSON_in_text",
        "Here: {broken document} and more",
        False,
    ),
    (
        C + "TestJSONCleaner_RealWorldScenarios",
        '{\n "repo": {"owner": "acme"},\n // counted\n "total": 2,\n "items": [\n'
        '  {"n": 1, /* note */ "score": 4,}, // last\n ],\n}',
        True,
    ),
]


@pytest.mark.parametrize(("text", "passes"), [c[1:] for c in CLEANER], ids=[c[0] for c in CLEANER])
def test_cleaner(ws: Workspace, text: str, passes: bool) -> None:
    ok, error, _ = _schema_check(ws, text)
    assert ok is passes, error


def test_cleaner_keeps_string_content(ws: Workspace) -> None:
    """contract/jsonschema_cleaner_test.go:TestJSONCleaner_RealWorldScenarios (content kept):
    a string holding `//` and `/*` is not cut as a comment."""
    schema = {"type": "object", "properties": {"key": {"const": "a // b /* c */"}}}
    ok, error, _ = _schema_check(ws, '{"key": "a // b /* c */",}', schema)
    assert ok, error


# --------------------------------------------------- jsonschema_wrapper_test.go: envelopes
W = "contract/jsonschema_wrapper_test.go:"
FULL = {
    "error_type": "contract_validation",
    "contract_type": "json_schema",
    "step_id": "s1",
    "final_error": "validation failed",
    "attempts": 3,
}
# (id, document, passes against PAIR, what the error says)
WRAPPERS: list[tuple[str, Any, bool, str]] = [
    (W + "TestDetectErrorWrapper_NonJSON", "not a document at all", False, "not valid JSON"),
    (W + "TestDetectErrorWrapper_ValidNonWrapper", {"key": "v", "value": 42}, True, ""),
    (
        W + "TestDetectErrorWrapper_TableDriven/full_wrapper_with_valid_raw_output_JSON",
        {**FULL, "raw_output": '{"key": "inner"}'},
        True,
        "",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/wrapper_with_non-JSON_raw_output",
        {**FULL, "raw_output": "plain text output"},
        False,
        "raw_output is not JSON",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/wrapper_with_4_fields",
        {
            "error_type": "adapter_error",
            "raw_output": '{"key": "x"}',
            "contract_type": "test_suite",
            "step_id": "s2",
        },
        True,
        "",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/wrapper_with_3_fields_(minimum)",
        {
            "error_type": "adapter_error",
            "raw_output": '{"key": "x"}',
            "contract_type": "json_schema",
        },
        True,
        "",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/wrapper_with_4_fields_but_non-JSON_raw_output",
        {
            "error_type": "adapter_error",
            "raw_output": "not json",
            "contract_type": "json_schema",
            "step_id": "s1",
        },
        False,
        "raw_output is not JSON",
    ),
    # not wrappers: validated as the document itself, which has no `key`
    (
        W + "TestDetectErrorWrapper_TableDriven/error_type_only_-_not_a_wrapper",
        {"error_type": "some_error"},
        False,
        "'key' is a required property",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/raw_output_only_-_not_a_wrapper",
        {"raw_output": '{"key": "x"}'},
        False,
        "'key' is a required property",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/error_type_+_raw_output_but_no_third_field",
        {"error_type": "e", "raw_output": '{"key": "x"}'},
        False,
        "'key' is a required property",
    ),
    (
        W + "TestDetectErrorWrapper_TableDriven/empty_wrapper",
        {"error_type": "", "raw_output": "", "contract_type": "", "attempts": 0},
        False,
        "'key' is a required property",
    ),
    (W + "TestDetectErrorWrapper_EmptyInput", "", False, "is empty"),
]


@pytest.mark.parametrize(
    ("doc", "passes", "says"), [c[1:] for c in WRAPPERS], ids=[c[0] for c in WRAPPERS]
)
def test_wrapper(ws: Workspace, doc: Any, passes: bool, says: str) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    ok, error, _ = _schema_check(ws, text, PAIR)
    assert ok is passes, error
    assert says in error


def test_wrapper_detection_can_be_turned_off(ws: Workspace) -> None:
    """contract/jsonschema_wrapper_test.go (DetectErrorWrapper is skipped with
    `disable_wrapper_detection`): the envelope itself is then the document."""
    doc = {**FULL, "raw_output": '{"key": "inner"}'}
    ok, error, _ = _schema_check(ws, json.dumps(doc), PAIR, disable_wrapper_detection=True)
    assert not ok and "'key' is a required property" in error


# ------------------------------------------------- contract_test.go: the json_schema type
K = "contract/contract_test.go:"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SCHEMA_ROWS: list[tuple[str, Any, str, bool]] = [
    (K + "TestJSONSchemaValidator_Valid", NAME, '{"name": "Ada"}', True),
    (K + "TestJSONSchemaValidator_Invalid", NAME, '{"name": 7}', False),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/valid_object",
        {**NAME, "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}},
        '{"name": "Ada", "age": 36}',
        True,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/wrong_type_for_string_field",
        NAME,
        '{"name": 5}',
        False,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/wrong_type_for_integer_field",
        {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]},
        '{"age": "old"}',
        False,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/missing_required_field",
        NAME,
        '{"other": 1}',
        False,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/invalid_JSON_artifact",
        {"type": "object"},
        "{this is no json}",
        False,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/array_instead_of_object",
        {"type": "object"},
        "[1, 2]",
        False,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/nested_object_validation",
        {
            "type": "object",
            "properties": {
                "user": {
                    "type": "object",
                    "properties": {"email": {"type": "string", "format": "email"}},
                }
            },
        },
        '{"user": {"email": "ada@example.org"}}',
        True,
    ),
    (
        K + "TestJSONSchemaValidator_ValidationFailure_TableDriven/additional_properties",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
        },
        '{"name": "a", "extra": 1}',
        False,
    ),
    (
        K + "TestValidate_AllTypes/json_schema_valid",
        {"type": "object", "properties": {"value": {"type": "number"}}},
        '{"value": 4}',
        True,
    ),
    (
        K + "TestValidate_AllTypes/json_schema_invalid",
        {"type": "object", "properties": {"value": {"type": "number"}}},
        '{"value": "four"}',
        False,
    ),
    (K + "TestValidate_Function/valid_json_schema", {"type": "object"}, "{}", True),
]


@pytest.mark.parametrize(
    ("schema", "text", "passes"), [c[1:] for c in SCHEMA_ROWS], ids=[c[0] for c in SCHEMA_ROWS]
)
def test_json_schema(ws: Workspace, schema: Any, text: str, passes: bool) -> None:
    """Wave's tests write the document to `.agents/artifact.json`, its default when a
    contract names no `source` and the step no output: swell reads it there too."""
    ws.write(".agents/artifact.json", text)
    result = ws.check({"type": "json_schema", "schema": json.dumps(schema)})
    assert result.passed is passes, result.error


@pytest.mark.parametrize(
    "case",
    [K + "TestJSONSchemaValidator_MissingSchema", K + "TestValidate_Function/missing_schema"],
)
def test_json_schema_without_a_schema_fails(ws: Workspace, case: str) -> None:
    ws.write(".agents/artifact.json", "{}")
    result = ws.check({"type": "json_schema"})
    assert not result.passed and "needs `schema_path` or `schema`" in (result.error or "")


# ---------------------------------------------------------- contract_test.go: test_suite
SUITE = [
    (K + "TestTestSuiteValidator_CommandExecution", "echo hello", True),
    (K + "TestTestSuiteValidator_CommandFailure", "false", False),
    (K + "TestValidate_AllTypes/test_suite_success", "true", True),
    (K + "TestValidate_AllTypes/test_suite_failure", "false", False),
]


@pytest.mark.parametrize(("command", "passes"), [c[1:] for c in SUITE], ids=[c[0] for c in SUITE])
def test_test_suite(ws: Workspace, command: str, passes: bool) -> None:
    assert ws.check({"type": "test_suite", "command": command}).passed is passes


def test_test_suite_without_a_command_fails(ws: Workspace) -> None:
    """contract/contract_test.go:TestTestSuiteValidator_MissingCommand"""
    result = ws.check({"type": "test_suite"})
    assert not result.passed and "command" in (result.error or "")


# ----------------------------------------------------- non_empty_file_test.go
N = "contract/non_empty_file_test.go:"


@pytest.mark.parametrize(
    ("source", "passes", "says"),
    [
        ("out/result.json", True, ""),
        ("out/empty.txt", False, "empty"),
        ("out/missing.txt", False, "does not exist"),
        (None, False, "source"),
        ("ABS", True, ""),
    ],
    ids=[
        N + "TestNonEmptyFileValidator_Validate/non_empty_file_passes",
        N + "TestNonEmptyFileValidator_Validate/empty_file_fails",
        N + "TestNonEmptyFileValidator_Validate/missing_file_fails",
        N + "TestNonEmptyFileValidator_Validate/no_source_fails",
        N + "TestNonEmptyFileValidator_Validate/absolute_path_resolves_(inside_the_workspace)",
    ],
)
def test_non_empty_file(ws: Workspace, source: str | None, passes: bool, says: str) -> None:
    ws.write("out/result.json", '{"result": "ok"}')
    ws.write("out/empty.txt", "")
    if source == "ABS":
        source = str(ws.path / "out/result.json")
    result = ws.check({"type": "non_empty_file", **({"source": source} if source else {})})
    assert result.passed is passes, result.error
    assert says in (result.error or "")


def test_non_empty_file_outside_the_workspace_is_refused(ws: Workspace, tmp_path: Path) -> None:
    """contract/non_empty_file_test.go:TestNonEmptyFileValidator_Validate/absolute_path_resolves:
    Wave reads an absolute path anywhere; swell only inside the workspace (deliberate:
    a contract never reads outside the step's workspace, docs/conformance.md)."""
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"result": "ok"}')
    result = ws.check({"type": "non_empty_file", "source": str(outside)})
    assert not result.passed


def test_non_empty_file_with_must_pass_still_fails_an_empty_file(ws: Workspace) -> None:
    """N:TestNonEmptyFileValidator_MustPass"""
    ws.write("out/empty.txt", "")
    result = ws.check({"type": "non_empty_file", "source": "out/empty.txt", "must_pass": True})
    assert not result.passed and "empty" in (result.error or "")


@pytest.mark.parametrize(
    "name",
    ["json_schema", "typescript_interface", "test_suite", "llm_judge", "non_empty_file"],
    ids=[K + f"TestNewValidator/{n}" for n in ("json_schema", "typescript_interface",
         "test_suite", "llm_judge")] + [N + "TestNonEmptyFileValidator_ViaNewValidator"],
)  # fmt: skip
def test_the_type_exists(name: str) -> None:
    assert default_contract_types().get(name).name == name


@pytest.mark.parametrize(
    ("must_pass", "passes"),
    [(True, False), (False, True), (True, False)],
    ids=[
        K + "TestTypeScriptValidator_MissingFile",
        K + "TestTypeScriptValidator_GracefulDegradation",
        K + "TestTypeScriptValidator_MustPass",
    ],
)
def test_typescript_without_tsc(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, must_pass: bool, passes: bool
) -> None:
    """Without `tsc` the check cannot be made: it passes with a warning, or fails when
    the contract sets `must_pass` (saying how to install it), as in Wave."""
    monkeypatch.setenv("PATH", str(ws.project))  # no tsc anywhere
    result = ws.check(
        {"type": "typescript_interface", "schema_path": "types/missing.ts", "must_pass": must_pass}
    )
    assert result.passed is passes, result.error
    if not passes:
        assert "tsc" in (result.error or "")


# ----------------------------------------------------------------- agent_review_test.go
AR = "contract/agent_review_test.go:TestParseReviewFeedback/"
VERDICTS = [
    ("valid_pass_JSON", '{"verdict":"pass","issues":[],"suggestions":[],"confidence":0.95,'
     '"summary":"fine"}', "pass", False),
    ("valid_fail_JSON_with_issues", '{"verdict":"fail","issues":[{"severity":"major",'
     '"description":"no tests"}],"suggestions":["add tests"],"confidence":0.8,'
     '"summary":"incomplete"}', "fail", False),
    # Wave's `warn` passes; swell records it as a pass with a warning
    ("valid_warn_JSON", '{"verdict":"warn","issues":[{"severity":"minor","description":"style"}],'
     '"suggestions":[],"confidence":0.7,"summary":"minor"}', "pass", True),
    ("JSON_in_markdown_fences", '```json\n{"verdict":"pass","issues":[],"suggestions":[],'
     '"confidence":0.9,"summary":"ok"}\n```', "pass", False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "verdict", "warned"), [c[1:] for c in VERDICTS], ids=[AR + c[0] for c in VERDICTS]
)
def test_review_verdict(answer: str, verdict: str, warned: bool) -> None:
    feedback, warn = parse_answer(AgentAnswer(success=True, text=answer))
    assert (feedback.verdict, warn) == (verdict, warned)


BAD_REVIEWS = [
    ("empty_output", "", "empty"),
    ("invalid_verdict_enum", '{"verdict":"unknown","issues":[],"suggestions":[],'
     '"confidence":0.5,"summary":"x"}', "verdict"),
    ("confidence_out_of_range_high", '{"verdict":"pass","issues":[],"suggestions":[],'
     '"confidence":1.5,"summary":"x"}', "confidence"),
    ("confidence_out_of_range_low", '{"verdict":"pass","issues":[],"suggestions":[],'
     '"confidence":-0.1,"summary":"x"}', "confidence"),
    ("completely_unparseable_output", "Plain words from the reviewer, no JSON.", "no JSON"),
    # Wave takes zero values for what is missing; swell asks the reviewer again (deliberate)
    ("missing_required_fields(deliberate)", '{"verdict":"pass"}', "summary"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "says"), [c[1:] for c in BAD_REVIEWS], ids=[AR + c[0] for c in BAD_REVIEWS]
)
def test_review_refused(answer: str, says: str) -> None:
    with pytest.raises(MalformedReview, match=says):
        parse_answer(AgentAnswer(success=True, text=answer))


# -------------------------------------------------------------------- llm_judge_test.go
LJ = "contract/llm_judge_test.go:"


def _judge(verdicts: list[bool] | str) -> RunAgent:
    """A stand-in judge answering with these verdicts (or this text)."""

    async def answer(call: AgentCall) -> AgentAnswer:
        if isinstance(verdicts, str):
            return AgentAnswer(success=True, text=verdicts)
        results = [
            {"criterion": f"c{i}", "pass": ok, "reasoning": "found" if ok else "SQL injection"}
            for i, ok in enumerate(verdicts)
        ]
        return AgentAnswer(success=True, structured={"criteria_results": results})

    return answer


JUDGED = [
    ("TestLLMJudge_AllCriteriaPass", [True, True, True], 0.8, True),
    ("TestLLMJudge_ThresholdFailure", [True, False, False, False], 0.8, False),
    ("TestLLMJudge_ThresholdBoundary", [True, True, False, False], 0.5, True),
    ("TestLLMJudge_DefaultThreshold", [True, True, False], None, False),
]


@pytest.mark.parametrize(
    ("verdicts", "threshold", "passes"), [c[1:] for c in JUDGED], ids=[LJ + c[0] for c in JUDGED]
)
def test_judge_score(
    ws: Workspace, verdicts: list[bool], threshold: float | None, passes: bool
) -> None:
    ws.write(".agents/artifact.json", '{"code": "x"}')
    criteria = [f"criterion {i}" for i in range(len(verdicts))]
    contract = {"type": "llm_judge", "criteria": criteria}
    if threshold is not None:
        contract["threshold"] = threshold
    result = ws.check(contract, run_agent=_judge(verdicts))
    assert result.passed is passes, result.error
    if not passes and threshold == 0.8:  # the score, and each failing criterion's reason
        assert "25%" in (result.error or "") and "[FAIL]" in (result.error or "")
        assert "SQL injection" in (result.error or "")


def test_judge_without_criteria_fails(ws: Workspace) -> None:
    """LJ:TestLLMJudge_MissingCriteria"""
    ws.write(".agents/artifact.json", "{}")
    result = ws.check({"type": "llm_judge"}, run_agent=_judge([True]))
    assert not result.passed and "criteri" in (result.error or "")


def test_judge_answering_no_json_fails(ws: Workspace) -> None:
    """LJ:TestLLMJudge_MalformedResponse"""
    ws.write(".agents/artifact.json", "{}")
    result = ws.check(
        {"type": "llm_judge", "criteria": ["a"]}, run_agent=_judge("I think it is fine.")
    )
    assert not result.passed


# -------------------------------------------------------------------- testsuite_test.go
TS = "contract/testsuite_test.go:"
SUITE_ROWS = [
    ("successful_echo_command", "echo hello world", True, ""),
    ("successful_true_command", "true", True, ""),
    ("failing_false_command", "false", False, "exit code 1"),
    ("nonexistent_command", "nonexistent_command_xyz_123", False, "exit code 127"),
    ("command_with_exit_code_1", "sh -c 'exit 1'", False, "exit code 1"),
    ("command_with_exit_code_2", "sh -c 'exit 2'", False, "exit code 2"),
    ("command_string_parsing_-_echo_hello_world", "echo hello world", True, ""),
    ("command_string_parsing_-_failing_command", "sh -c exit\\ 1", False, "exit code 1"),
]


@pytest.mark.parametrize(
    ("command", "passes", "says"),
    [c[1:] for c in SUITE_ROWS],
    ids=[TS + "TestTestSuiteValidator_TableDriven/" + c[0] for c in SUITE_ROWS],
)
def test_suite_rows(ws: Workspace, command: str, passes: bool, says: str) -> None:
    result = ws.check({"type": "test_suite", "command": command})
    assert result.passed is passes, result.error
    assert says in (result.error or "")


def test_suite_failure_shows_stdout_and_stderr(ws: Workspace) -> None:
    """TS:TestTestSuiteValidator_CommandWithStdout, _CommandWithStderr and
    _ValidationErrorDetails: the failure names the exit code and what was printed."""
    result = ws.check(
        {"type": "test_suite", "command": "echo to-stdout; echo to-stderr >&2; exit 1"}
    )
    assert not result.passed
    assert "to-stdout" in (result.error or "") and "to-stderr" in (result.error or "")


def test_suite_runs_in_the_workspace(ws: Workspace) -> None:
    """TS:TestTestSuiteValidator_WorkingDirectory and TestResolveContractDir/empty_dir_uses_workspace"""
    ws.write("marker.txt", "here")
    assert ws.check({"type": "test_suite", "command": "test -f marker.txt"}).passed


def test_suite_runs_a_script(ws: Workspace) -> None:
    """TS:TestTestSuiteValidator_ScriptExecution and _FailingScript"""
    ws.write("ok.sh", "#!/bin/sh\nexit 0\n").chmod(0o755)
    ws.write("bad.sh", "#!/bin/sh\necho broken\nexit 3\n").chmod(0o755)
    assert ws.check({"type": "test_suite", "command": "./ok.sh"}).passed
    failed = ws.check({"type": "test_suite", "command": "./bad.sh"})
    assert not failed.passed and "broken" in (failed.error or "")


def test_suite_keeps_the_end_of_a_long_output(ws: Workspace) -> None:
    """TS:TestTestSuiteValidator_LongOutput: the end of the output, capped."""
    command = "i=1; while [ $i -le 500 ]; do echo line$i; i=$((i+1)); done; exit 1"
    error = ws.check({"type": "test_suite", "command": command}).error or ""
    assert "line500" in error and "line1\n" not in error


def test_suite_sees_the_environment(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """TS:TestTestSuiteValidator_EnvironmentVariables"""
    monkeypatch.setenv("WAVE_TABLES_VALUE", "present")
    assert ws.check({"type": "test_suite", "command": 'test "$WAVE_TABLES_VALUE" = present'}).passed


# ----------------------------------------------------------------------- format_test.go
FT = "contract/format_test.go:"
ISSUE_BODY = (
    "## Description\nThis adds sign-in with OAuth2 to the dashboard app.\n\n"
    "## Acceptance Criteria\n- People can sign in\n- Tokens are kept safe\n"
)
PR_BODY = (
    "## Summary\nThis adds OAuth2 sign-in.\n\n## Changes\n- client settings\n- token refresh\n\n"
    "## Testing\n- unit tests for the flow\n\n## Related Issues\nRelated to #123\n\n"
    "## Checklist\n- [x] Tests added\n"
)
PR_CLOSES = (
    "## Summary\nA feature.\n\n## Changes\n- one\n\n## Testing\n- one\n\nCloses #455\n\n- [x] Done"
)
PR_NO_REF = "## Summary\nA feature.\n\n## Changes\n- one\n\n## Testing\n- one and more words here"
LONG = "Some body text long enough to pass the length check of the format rules, surely."
FORMATS: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("ValidateGitHubIssueFormat/valid_issue_format", "github-issue-analysis",
     {"title": "feat: Add user authentication", "body": ISSUE_BODY,
      "labels": ["enhancement"]}, None),
    ("ValidateGitHubIssueFormat/title_too_short", "github-issue-analysis",
     {"title": "Add auth", "body": ISSUE_BODY, "labels": ["x"]}, "title"),
    ("ValidateGitHubIssueFormat/title_with_placeholder", "github-issue-analysis",
     {"title": "[TODO] Implement feature", "body": ISSUE_BODY, "labels": ["x"]}, "placeholder"),
    ("ValidateGitHubIssueFormat/body_too_short", "github-issue-analysis",
     {"title": "feat: Add user authentication", "body": "Short body", "labels": ["x"]}, "body"),
    ("ValidateGitHubIssueFormat/missing_required_sections", "github-issue-analysis",
     {"title": "feat: Add user authentication", "body": LONG, "labels": ["x"]}, "Description"),
    ("ValidateGitHubIssueFormat/no_labels", "github-issue-analysis",
     {"title": "feat: Add user authentication", "body": ISSUE_BODY, "labels": []}, "label"),
    ("ValidateGitHubPRFormat/valid_PR_format", "github-pr-draft",
     {"title": "feat: Add OAuth2 authentication support", "body": PR_BODY,
      "head": "feature/oauth2", "base": "main"}, None),
    ("ValidateGitHubPRFormat/title_too_long", "github-pr-draft",
     {"title": "feat: " + "a very long title " * 6, "body": PR_BODY, "head": "f/x",
      "base": "main"}, "title"),
    ("ValidateGitHubPRFormat/PR_from_main_branch", "github-pr-draft",
     {"title": "feat: Add a feature here", "body": PR_BODY, "head": "main", "base": "dev"},
     "main"),
    ("ValidateGitHubPRFormat/body_too_short", "github-pr-draft",
     {"title": "feat: Add a feature here", "body": "Short", "head": "f/x", "base": "main"},
     "body"),
    ("ValidateGitHubPRFormat/closing_keyword_violation", "github-pr-draft",
     {"title": "feat: Add a feature here", "body": PR_CLOSES + " " + LONG, "head": "f/x",
      "base": "main"}, "Closes"),
    ("ValidateGitHubPRFormat/missing_issue_reference", "github-pr-draft",
     {"title": "feat: Add a feature here", "body": PR_NO_REF + " " + LONG, "head": "f/x",
      "base": "main"}, "Related to"),
    ("ValidateImplementationResults/valid_implementation", "implementation-results",
     {"files_changed": ["a.go"], "tests_passed": True, "builds_successfully": True,
      "implementation_notes": "Implemented OAuth2 sign-in with token refresh"}, None),
    ("ValidateImplementationResults/no_files_changed", "implementation-results",
     {"files_changed": [], "tests_passed": True, "builds_successfully": True,
      "implementation_notes": "Implementation notes that are long enough"}, "no files changed"),
    ("ValidateImplementationResults/tests_failing", "implementation-results",
     {"files_changed": ["a.go"], "tests_passed": False, "builds_successfully": True,
      "implementation_notes": "Implementation notes that are long enough"}, "tests are failing"),
    ("ValidateImplementationResults/build_failing", "implementation-results",
     {"files_changed": ["a.go"], "tests_passed": True, "builds_successfully": False,
      "implementation_notes": "Implementation notes that are long enough"},
     "does not build"),
    ("ValidateImplementationResults/notes_too_brief", "implementation-results",
     {"files_changed": ["a.go"], "tests_passed": True, "builds_successfully": True,
      "implementation_notes": "Done"}, "too brief"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "doc", "says"),
    [c[1:] for c in FORMATS],
    ids=[FT + "TestFormatValidator_" + c[0] for c in FORMATS],
)
def test_format(ws: Workspace, rules: str, doc: dict[str, Any], says: str | None) -> None:
    ws.write("out/result.json", json.dumps(doc))
    schema = f".agents/contracts/{rules}.schema.json"  # the name picks the rules
    result = ws.check({"type": "format", "source": "out/result.json", "schema_path": schema})
    assert result.passed is (says is None), result.error
    if says:
        assert says.lower() in (result.error or "").lower(), result.error


@pytest.mark.parametrize(
    ("schema", "rules"),
    [
        (".agents/contracts/github-issue-analysis.schema.json", "github_issue"),
        (".agents/contracts/github-pr-draft.schema.json", "github_pr"),
        (".agents/contracts/github-pr-info.schema.json", "github_pr"),
        (".agents/contracts/implementation-results.schema.json", "implementation_results"),
        (".agents/contracts/analysis.schema.json", "analysis"),
        (".agents/contracts/unknown.schema.json", "generic"),
        (None, "generic"),
    ],
    ids=[
        FT + "TestInferFormatType/" + n
        for n in ("issue", "pr-draft", "pr-info", "implementation", "analysis", "unknown", "empty")
    ],
)
def test_format_rules_by_schema_name(ws: Workspace, schema: str | None, rules: str) -> None:
    ws.write("out/result.json", json.dumps({"note": "TODO"}))
    contract = {"type": "format", "source": "out/result.json"}
    if schema:
        contract["schema_path"] = schema
    assert ws.check(contract).details.get("rules") == rules


# ----------------------------------------------------------------- markdownspec_test.go
MS = "contract/markdownspec_test.go:"
STORY_SCHEMA = {
    "type": "object",
    "required": ["title", "user_stories"],
    "properties": {
        "title": {"type": "string", "minLength": 5},
        "user_stories": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["as_a", "i_want", "so_that", "acceptance_criteria"],
                "properties": {
                    "acceptance_criteria": {"type": "array", "items": {"type": "string"}}
                },
            },
        },
    },
}
GOOD_SPEC = """# Team calendar

## Overview
Shared calendars for teams.

## User Stories

### Story 1
As a: member
I want: to see my team's meetings
So that: I do not double-book

Acceptance criteria:
- Meetings of every member show
- Clashes are marked

### Story 2
As a: lead
I want: to book a room for the team
So that: everyone has a seat

Acceptance criteria:
- Rooms list their size

## Testing Strategy
Unit tests for clash detection
"""
THIN_SPEC = "# Thin\n\n## Overview\nNot much here.\n\n## Data Model\nA table.\n"


@pytest.mark.parametrize(
    ("source", "with_schema", "passes"),
    [
        ("specs/good.md", True, True),
        ("specs/thin.md", True, False),
        ("specs/good.md", False, True),
        ("specs/missing.md", True, False),
        (None, True, False),
    ],
    ids=[
        MS + "TestMarkdownSpecValidator_Validate/" + n
        for n in (
            "valid_markdown_spec_with_schema",
            "invalid_markdown_spec_with_schema",
            "markdown_spec_without_schema",
            "missing_source_file",
            "missing_source_config",
        )
    ],
)
def test_markdown_spec(ws: Workspace, source: str | None, with_schema: bool, passes: bool) -> None:
    ws.write("specs/good.md", GOOD_SPEC)
    ws.write("specs/thin.md", THIN_SPEC)
    ws.write("schemas/spec.json", json.dumps(STORY_SCHEMA), base=ws.project)
    contract: dict[str, Any] = {"type": "markdown_spec"}
    if source:
        contract["source"] = source
    if with_schema:
        contract["schema_path"] = "schemas/spec.json"
    result = ws.check(contract)
    assert result.passed is passes, result.error
    if passes:  # written next to the source for later steps, as in Wave
        stories = json.loads((ws.path / "specs" / "good.json").read_text())["user_stories"]
        assert len(stories) == 2 and all(s["acceptance_criteria"] for s in stories)


@pytest.mark.parametrize(
    ("stories", "count"),
    [
        ("As a: user\nI want: to log in\nSo that: I get in\nAcceptance criteria:\n- a\n"
         "As a: admin\nI want: to manage\nSo that: I control\nAcceptance criteria:\n- b\n", 2),
        ("As a user, I want to log in so that I can get in.\nAcceptance criteria:\n* a\n* b\n", 1),
    ],
    ids=[MS + "TestParseUserStories/standard_format", MS + "TestParseUserStories/alternative_format"],
)  # fmt: skip
def test_user_stories(ws: Workspace, stories: str, count: int) -> None:
    ws.write("spec.md", "# A spec title\n\n## User Stories\n" + stories)
    assert ws.check({"type": "markdown_spec", "source": "spec.md"}).passed
    found = json.loads((ws.path / "spec.json").read_text())["user_stories"]
    assert len(found) == count and all(s["acceptance_criteria"] for s in found)
