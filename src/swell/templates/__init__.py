"""The template and expression languages inside `{{ }}`: expressions, rendering,
and the shell lexer and rules for placeholders in scripts. Imports no other
swell package but errors (manifest/ and the engine import it)."""
