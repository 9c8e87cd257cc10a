"""Configuration of a :class:`~langchain_tiered_memory.TieredMemory`.

The defaults are the seed design's numbers. Every value is validated when the config is
built, so a bad value fails at construction with a message that names the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError

#: The smallest window budget a config may leave: below it not even one truncated message
#: with its marker fits, and the model would be sent nothing of the conversation.
MIN_WINDOW_TOKENS = 64
#: Largest token budget or count accepted: far past any model's context window, and small
#: enough that every sum of budgets stays a 64-bit integer (SQLite's, numpy's).
MAX_TOKENS_LIMIT = 1_000_000_000
#: Most memories (or episodes) one search returns; ``memories_k``/``episodes_k`` above it
#: could never be served (``entries.MAX_K``, kept equal by a test).
MAX_RECALL_K = 100
#: Longest wait accepted for a model call, a lease or a retry delay: a day. Longer ones are
#: a mistake (an infinite timeout would make every wait fail: Python's waits take at most
#: ``threading.TIMEOUT_MAX``), and a real call that takes a day has failed.
MAX_SECONDS = 86_400.0
#: Most attempts a job may get; the retry delay doubles each time, so past this it would
#: outgrow any useful schedule.
MAX_ATTEMPTS = 100
#: Longest idle time before a session's episode is written: ten years, in minutes (far
#: longer ones overflow Python's dates).
MAX_IDLE_MINUTES = 10 * 365 * 24 * 60
#: Most memories a user may keep (SQLite's LIMIT takes a 64-bit integer; this leaves room).
MAX_MEMORIES_LIMIT = 1_000_000_000
#: Longest wait of a forget for the readers of the write-ahead log (writers wait as long).
MAX_SCRUB_WAIT_SECONDS = 60.0
#: Model calls a job may make one after the other, each up to ``llm_timeout_seconds``: the
#: extraction asked in each structured-output method in turn (``extraction.AUTO_METHODS``,
#: three), then the compression of an overlong summary. A running job's lease is renewed for
#: this long at most (``jobs/lease.py``): past it, the job is wedged.
CALLS_PER_JOB = 4


class SpendBudget(BaseModel):
    """Limits on the LLM spend of background jobs in any sliding hour (``None``: no limit).

    ``calls_per_hour`` / ``tokens_per_hour`` count every user's jobs together;
    ``user_calls_per_hour`` / ``user_tokens_per_hour`` count one user's. Tokens are prompt +
    completion tokens as the model reports them (``AIMessage.usage_metadata``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls_per_hour: int | None = Field(default=None, ge=1, description="LLM calls per hour, all users together.")
    tokens_per_hour: int | None = Field(default=None, ge=1, description="Tokens per hour, all users together.")
    user_calls_per_hour: int | None = Field(default=None, ge=1, description="LLM calls per hour of one user.")
    user_tokens_per_hour: int | None = Field(default=None, ge=1, description="Tokens per hour of one user.")

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return any(v is not None for v in self.model_dump().values())

    def limits(self, scope: str) -> tuple[int | None, int | None]:
        """``(calls, tokens)`` limits of ``scope``: ``"all"`` or ``"user"``."""
        if scope == "user":
            return self.user_calls_per_hour, self.user_tokens_per_hour
        return self.calls_per_hour, self.tokens_per_hour


class MemoryConfig(BaseModel):
    """Budgets and forgetting parameters of the memory layers.

    Token budgets are in the counter's tokens (tiktoken ``cl100k_base`` by default). The
    context budget is ``max_tokens - output_reserve``; every message and memory section sent
    to the model is counted against it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    max_tokens: int = Field(
        100_000, gt=0, le=MAX_TOKENS_LIMIT, description="The model's context window, in tokens."
    )
    system_reserve: int = Field(
        5_000,
        ge=0, le=MAX_TOKENS_LIMIT,
        description=(
            "Tokens kept for the system prompt. A pinned system message from the thread is "
            "charged to it; what it leaves unused stays free for a prompt the caller adds "
            "outside the memory (a prompt template, an agent's prompt)."
        ),
    )
    output_reserve: int = Field(
        4_000, ge=0, le=MAX_TOKENS_LIMIT, description="Tokens kept free for the model's answer."
    )
    summary_max_tokens: int = Field(
        2_000, ge=0, le=MAX_TOKENS_LIMIT, description="Upper bound of a thread's running summary."
    )
    importance_threshold: float = Field(
        0.6, ge=0.0, le=1.0, description="Extracted memories below this importance are not stored."
    )
    decay: float = Field(
        0.95,
        ge=0.0,
        le=1.0,
        description="Daily decay factor: effective importance = importance × decay^days.",
    )
    access_boost: float = Field(
        0.1, ge=0.0, le=1.0, description="Importance added each time a memory is recalled (capped)."
    )
    max_memories_per_user: int = Field(
        10_000, gt=0, le=MAX_MEMORIES_LIMIT, description="Per-user cap; the lowest effective importance goes first."
    )
    merge_threshold: float = Field(
        0.95,
        ge=0.0,
        le=1.0,
        description="A new memory with cosine above this to an old one merges into it.",
    )
    score_threshold: float = Field(
        0.15,
        ge=0.0,
        le=1.0,
        description=(
            "Recalled units whose relevance (0..1, from similarity: see scoring.py) is below "
            "this are not relevant and are dropped."
        ),
    )

    entities_max_tokens: int = Field(
        1_000, ge=0, le=MAX_TOKENS_LIMIT, description="Upper bound of the entities section of the context."
    )
    memories_max_tokens: int = Field(
        2_000, ge=0, le=MAX_TOKENS_LIMIT, description="Upper bound of the long-term memories section."
    )
    episodes_max_tokens: int = Field(
        1_000, ge=0, le=MAX_TOKENS_LIMIT, description="Upper bound of the past-episodes section."
    )
    # 50: on LoCoMo the evidence quoted in the context went 0.873 -> 0.886 from 25 to 35
    # (same words: the budget cut the rest). Since a passage dates its first line only
    # (recall/quotes.py) more evidence fits the same budget: 35 -> 0.897, 40-45 -> 0.901,
    # 50 -> 0.905, 60 -> 0.908; each 5 more cost about 0.3 ms of before_turn at 10k x 10k.
    memories_k: int = Field(
        50, ge=0, le=MAX_RECALL_K,
        description=(
            "Pieces of evidence (memories, turns) the context recalls per turn, at most; the "
            "section's token budget cuts them first."
        ),
    )
    episodes_k: int = Field(3, ge=0, le=MAX_RECALL_K, description="Past episodes recalled per turn.")
    ranking_model: str | None = Field(
        None,
        description=(
            "A ranking model fitted on your own conversations (the JSON file that "
            "benchmarks/fit_ranking.py writes); None: the one shipped, fitted on LoCoMo and "
            "LoCoMo-Plus (scoring.py, docs/recall.md)."
        ),
    )
    job_mode: Literal["inline", "background", "manual", "external"] = Field(
        "background",
        description=(
            "How extraction and summary jobs run: in a worker thread (agents), inside "
            "after_turn (tests, notebooks), only when flush() is called ('manual': "
            "opening the memory runs no job and writes nothing, so looking at a directory "
            "changes nothing; jobs wait in the journal for a memory that runs them), or by "
            "other processes sharing the database ('external': this one only journals them, "
            "and leaves the indexing to them too). "
            "Either way they are journaled first."
        ),
    )
    job_max_attempts: int = Field(
        5, ge=1, le=MAX_ATTEMPTS,
        description=(
            "Attempts before a job is marked failed. Tries against a model that cannot be "
            "reached do not count: job_retry_horizon_seconds bounds those."
        ),
    )
    job_backoff_seconds: float = Field(
        2.0, ge=0.0, le=MAX_SECONDS, allow_inf_nan=False, description="Delay before the first retry; doubles with each attempt."
    )
    job_retry_horizon_seconds: float = Field(
        900.0, ge=0.0, le=MAX_SECONDS, allow_inf_nan=False,
        description=(
            "How long a job keeps retrying while its model cannot be reached (refused "
            "connections, timeouts, HTTP 429 and 5xx), counted from its first such failure: "
            "the waits grow with the outage up to a minute, no worker is held meanwhile, and "
            "the job fails only once this has passed (jobs/retry.py). 0: such failures count "
            "as attempts like any other."
        ),
    )
    job_lease_seconds: float = Field(
        300.0, gt=0.0, le=MAX_SECONDS, allow_inf_nan=False,
        description=(
            "How long a worker owns a job before another may take it over. Renewed every "
            "third of it while the job runs, so it need not cover a slow model's calls: it is "
            "how soon the job of a worker that died runs elsewhere."
        ),
    )
    llm_timeout_seconds: float = Field(
        60.0, gt=0.0, le=MAX_SECONDS, allow_inf_nan=False, description="An extraction call taking longer fails (and is retried)."
    )
    llm_max_output_tokens: int | None = Field(
        None, gt=0, le=MAX_TOKENS_LIMIT,
        description=(
            "Output-token cap (max_tokens) of every extraction, episode and summary call. "
            "None: sized to each call's schema (extraction/caps.py: about 1,900 tokens for a "
            "turn, plus the summary budget when a summary is asked for, 650 for an episode), "
            "so a model that loops stops there instead of at the end of its context. A cut-off "
            "answer counts as its structured-output method failing, and the next one is "
            "tried. Raise it for reasoning models, whose thinking counts against it."
        ),
    )
    budget: SpendBudget = Field(
        default_factory=SpendBudget,
        description=(
            "Limits on what background LLM jobs may spend per hour (calls, tokens; in all and "
            "per user): over them, jobs wait and never fail (see llm/budget.py). Default: none; "
            "llm.spending.ENV_MODEL_BUDGET when the model comes from OPENAI_API_KEY."
        ),
    )
    idle_timeout_minutes: float | None = Field(
        None,
        gt=0.0,
        le=MAX_IDLE_MINUTES,
        allow_inf_nan=False,
        description=(
            "A thread idle this long gets its episode written (checked when the memory "
            "opens and by the background worker); None: only end_session() writes episodes."
        ),
    )
    scrub_wait_seconds: float = Field(
        2.0, ge=0.0, le=MAX_SCRUB_WAIT_SECONDS, allow_inf_nan=False,
        description=(
            "How long memory.admin.forget() (and close()) waits for readers of memory.db's write-ahead log "
            "— a read transaction open in this process, such as a checkpointer list() "
            "iterator, or in another — to truncate it, since its frames still hold the "
            "forgotten rows. Writers wait meanwhile. Past it the forget returns with "
            "'wal_scrubbed': False and a WARNING, and the truncation is retried (ops/forgetting.py)."
        ),
    )

    @model_validator(mode="after")
    def _check_budget(self) -> MemoryConfig:
        window = self.max_tokens - self.system_reserve - self.output_reserve
        if window < MIN_WINDOW_TOKENS:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) must exceed system_reserve "
                f"({self.system_reserve}) + output_reserve ({self.output_reserve}) by at least "
                f"{MIN_WINDOW_TOKENS} tokens, so that the conversation window has room; raise "
                "max_tokens or lower the reserves"
            )
        return self

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc)) from None

    @property
    def context_budget(self) -> int:
        """Tokens available for everything sent to the model: ``max_tokens - output_reserve``."""
        return self.max_tokens - self.output_reserve


# Why a field has its upper bound, added to the message of a value above it.
_WHY_BOUNDED = {
    "memories_k": f"one search returns at most {MAX_RECALL_K} memories",
    "episodes_k": f"one search returns at most {MAX_RECALL_K} episodes",
    "llm_timeout_seconds": "a call that takes longer than a day has failed",
    "job_lease_seconds": "a lease longer than a day would keep a crashed worker's job for as long",
    "job_backoff_seconds": "the delay doubles on each retry; start it below a day",
    "job_retry_horizon_seconds": (
        "after a longer outage, run the failed jobs again with memory.admin.jobs.retry() or `tiered-memory jobs retry --failed`"
    ),
    "job_max_attempts": "the retry delay doubles each time, so more attempts would never run",
    "scrub_wait_seconds": "every write waits as long; retry later with memory.admin.scrub() instead",
    "idle_timeout_minutes": "a longer idle time is a mistake, and a far longer one overflows Python's dates",
}


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "MemoryConfig"
        msg = err["msg"].removeprefix("Value error, ")
        why = _WHY_BOUNDED.get(field) if err["type"] == "less_than_equal" else None
        if why:
            msg += f" ({why})"
        parts.append(f"{field}: {msg} (got {err.get('input')!r})" if err["loc"] else msg)
    return "invalid MemoryConfig: " + "; ".join(parts)


def as_config(config: MemoryConfig | dict[str, Any] | None) -> MemoryConfig:
    """``config`` as a :class:`MemoryConfig` (``None``: the defaults; a dict: its fields)."""
    if config is None:
        return MemoryConfig()
    if isinstance(config, MemoryConfig):
        return config
    if isinstance(config, dict):
        return MemoryConfig(**config)
    raise ConfigError(f"config must be a MemoryConfig or a dict, got {type(config).__name__}")
