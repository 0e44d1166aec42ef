"""Step kinds, one module each (a `StepKind` subclass), registered by their `type`."""
