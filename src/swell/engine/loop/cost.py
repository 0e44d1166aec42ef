"""The cost ledger (`runtime.cost`): what each visit cost, and the run's budget.

A visit's cost is what its adapter reported (an API's or CLI's own figure), else its
tokens priced by a built-in table of dollars per million tokens, matched on the model
name (lower-cased: exactly, else by the longest prefix: `claude-sonnet-4-5` is priced
as `claude-sonnet`). A model the table does not know costs 0. The run's total is the
fold of its visits' and reviews' costs (`RunState.cost_usd`), so it survives a resume.

The budget's decisions are pure functions the run loop's `Decisions` call: one
`budget.warning` event when the total first reaches `warn_at`; once it reaches
`budget_ceiling`, the next step does not start and the run fails (never retried:
another attempt would spend more).
"""

from __future__ import annotations

from dataclasses import dataclass

from swell.events import models as ev
from swell.manifest.wave_models import CostConfig

# $ per million tokens (input, output); Wave's table (internal/cost/ledger.go)
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus": (15.0, 75.0),
    "claude-sonnet": (3.0, 15.0),
    "claude-haiku": (0.25, 1.25),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "o3": (10.0, 40.0),
    "o3-mini": (1.1, 4.4),
    "o4-mini": (1.1, 4.4),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.15, 0.6),
}
# longest first: `gpt-4o-mini-2024` is gpt-4o-mini, not gpt-4o (Wave's map order is random)
_BY_LENGTH = sorted(PRICES, key=len, reverse=True)


def price_of(model: str | None) -> tuple[float, float] | None:
    """The (input, output) price per million tokens of `model`, or None when unknown."""
    if not model:
        return None
    name = model.lower()
    if name in PRICES:
        return PRICES[name]
    return next((PRICES[p] for p in _BY_LENGTH if name.startswith(p)), None)


def estimate(model: str | None, tokens_in: int, tokens_out: int) -> float:
    """Tokens times the table's price (0 for a model it does not know)."""
    price = price_of(model)
    if price is None:
        return 0.0
    return round(tokens_in / 1e6 * price[0] + tokens_out / 1e6 * price[1], 6)


def visit_cost(model: str | None, tokens_in: int, tokens_out: int, reported: float | None) -> float:
    """What a visit cost: the adapter's own figure when it gave one, else the estimate."""
    return reported if reported is not None else estimate(model, tokens_in, tokens_out)


@dataclass(frozen=True)
class Budget:
    """`runtime.cost` as the run loop applies it; 0 means no limit."""

    warn_at: float = 0.0
    ceiling: float = 0.0
    currency: str | None = None

    @classmethod
    def of(cls, config: CostConfig) -> Budget:
        """Wave turns the ledger on with `enabled` or a ceiling; swell also honours a
        `warn_at` set alone (a threshold that never warns would be a silent no-op)."""
        if not (config.active or config.warn_at > 0):
            return cls()
        return cls(config.warn_at, config.budget_ceiling, config.currency)

    def money(self, amount: float) -> str:
        unit = self.currency or "USD"
        return f"${amount:.4f}" if unit.upper() == "USD" else f"{amount:.4f} {unit}"


def warning(budget: Budget, total: float, warned: bool) -> ev.BudgetWarning | None:
    """The one `budget.warning` of a run, when its total has reached `warn_at`."""
    if warned or budget.warn_at <= 0 or total < budget.warn_at:
        return None
    return ev.BudgetWarning(
        spent_usd=round(total, 6),
        warn_at=budget.warn_at,
        message=f"the run has spent {budget.money(total)}, past runtime.cost.warn_at "
        f"{budget.money(budget.warn_at)}",
    )


def exceeded(budget: Budget, total: float, step_id: str) -> tuple[ev.BudgetExceeded, str] | None:
    """The event and message that stop the run before `step_id` starts, once the run's
    total has reached `budget_ceiling`."""
    if budget.ceiling <= 0 or total < budget.ceiling:
        return None
    message = (
        f"budget exceeded: the run has spent {budget.money(total)}, reaching "
        f"runtime.cost.budget_ceiling {budget.money(budget.ceiling)}; step '{step_id}' "
        "was not started"
    )
    event = ev.BudgetExceeded(
        step_id=step_id, spent_usd=round(total, 6), ceiling=budget.ceiling, message=message
    )
    return event, message


__all__ = ["PRICES", "Budget", "estimate", "exceeded", "price_of", "visit_cost", "warning"]
