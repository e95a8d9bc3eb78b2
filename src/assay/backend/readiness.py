"""Is the target there and serving a model? Checked before a run, with retries and a clear message.

A server that is still loading its model refuses connections, answers 503 or 429, or lists no
model yet; `--wait-ready SECONDS` retries those until the server is ready or the time is up.
`/v1/models` is only needed to pick a model: with a model given, a server without that route
(404, 405, or a body that is not a model list) is ready as soon as it answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Final, TypeVar

from assay.backend.client import Backend, open_backend
from assay.backend.model_list import ModelsStatus, ModelsUnreachable, NotAModelList
from assay.backend.served_models import (
    RowModels,
    ServedModel,
    listed_as,
    unserved,
    unserved_rows,
)
from assay.backend.settings import BackendSettings
from assay.core.clock import Clock, MonotonicClock
from assay.errors import ServerNotReady

# Statuses of a server that is up but not ready yet (overloaded, loading, behind a proxy that
# waits for it), or that failed once (500: a server with an error rate fails its listing now
# and then): retried while `--wait-ready` lasts.
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
# Statuses of a server that has no `/v1/models` route: fine when the model is given.
NO_MODELS_ROUTE: Final = frozenset({404, 405, 501})
RETRY_INTERVAL_S: Final = 1.0
# How often a wait says what it waits for.
_NOTE_EVERY_S: Final = 10.0
# How often a wait checks for Ctrl-C, in loop time.
_INTERRUPT_POLL_S: Final = 0.05
# A bound on attempts whatever the clock does (a wait of days at one attempt per second fits).
_MAX_ATTEMPTS: Final = 10_000_000

_T = TypeVar("_T")


class _NotYet(Exception):
    """One attempt found the server not ready in a way that may pass; carries the reason."""


class Interrupted(Exception):
    """Ctrl-C arrived while waiting."""


async def check_ready(settings: BackendSettings, model: str | None = None) -> str:
    """The model to benchmark: `model` when given, else the first one the server lists.

    Raises `ServerNotReady` when nothing listens, `/v1/models` fails, or no model is listed.
    A configured model the server does not list is still used: some servers (TGI) accept any
    name, and a server that rejects it shows up as `http_status` errors with its own message.

    >>> import asyncio
    >>> settings = BackendSettings(base_url="http://127.0.0.1:9")
    >>> asyncio.run(check_ready(settings))
    Traceback (most recent call last):
    ...
    assay.errors.ServerNotReady: no server at http://127.0.0.1:9 (connection refused) (to wait...
    """
    ready = await wait_until_ready(settings, model)
    if ready is None:  # pragma: no cover - nothing interrupts without an `interrupted` check
        raise ServerNotReady("interrupted while waiting for the server")
    return ready


async def wait_until_ready(
    settings: BackendSettings,
    model: str | None = None,
    *,
    wait_s: float = 0.0,
    clock: Clock | None = None,
    interrupted: Callable[[], bool] = lambda: False,
    retry_interval_s: float = RETRY_INTERVAL_S,
    note: Callable[[str], None] = lambda _: None,
) -> str | None:
    """Like `check_ready`, retrying a server that is not ready yet for up to `wait_s` seconds;
    see `wait_for_model`."""
    served = await wait_for_model(
        settings,
        model,
        wait_s=wait_s,
        clock=clock,
        interrupted=interrupted,
        retry_interval_s=retry_interval_s,
        note=note,
    )
    return None if served is None else served.id


async def wait_for_model(
    settings: BackendSettings,
    model: str | None = None,
    *,
    wait_s: float = 0.0,
    clock: Clock | None = None,
    interrupted: Callable[[], bool] = lambda: False,
    retry_interval_s: float = RETRY_INTERVAL_S,
    note: Callable[[str], None] = lambda _: None,
    mix: tuple[str, ...] = (),
    rows: RowModels | None = None,
) -> ServedModel | None:
    """The model to benchmark, with its context window when `/v1/models` names it (read from
    the same answer, no request more), retrying a server that is not ready yet for up to
    `wait_s` seconds.

    A traffic mix's models (`mix`, `model` its first) must all be listed; one that is not is
    refused (`ServerNotReady`) with what the server serves. A server without the listing route
    cannot be checked and is taken at its word. The models a data file's `rows` name must be
    listed the same way (refused naming the row that first names one; a row naming the model
    returned passes, as that model did), without bearing on the model or window returned.

    Returns None as soon as `interrupted()` is true (Ctrl-C), also in the middle of a request.
    Retried: nothing listening, no answer in time, 429/500/502/503/504, an empty model list.
    Never retried: any other error status (401, 403, ...) and unreadable answers.
    While it waits, `note` hears what it waits for: at the first retry, then every
    `_NOTE_EVERY_S` seconds.
    """
    clock = clock or MonotonicClock()
    deadline_ns = clock.now_ns() + int(wait_s * 1e9)
    noted_ns: int | None = None
    try:
        async with open_backend(settings, clock) as backend:
            for attempt in range(1, _MAX_ATTEMPTS + 1):
                try:
                    return await until_interrupted(_attempt(backend, model, mix, rows), interrupted)
                except _NotYet as not_yet:
                    now_ns = clock.now_ns()
                    if now_ns >= deadline_ns or attempt == _MAX_ATTEMPTS:
                        raise ServerNotReady(_gave_up(str(not_yet), wait_s, attempt)) from None
                    if noted_ns is None or now_ns - noted_ns >= _NOTE_EVERY_S * 1e9:
                        noted_ns = now_ns
                        left = (deadline_ns - now_ns) / 1e9
                        note(
                            f"waiting for the server: {not_yet} (retrying every "
                            f"{retry_interval_s:g} s, {left:.0f} s left of --wait-ready)"
                        )
                    resume_ns = min(deadline_ns, now_ns + int(retry_interval_s * 1e9))
                    await until_interrupted(clock.sleep_until(resume_ns), interrupted)
    except Interrupted:
        return None
    raise AssertionError("unreachable: the last attempt returns or raises")


def _gave_up(reason: str, wait_s: float, attempts: int) -> str:
    if wait_s <= 0:
        return f"{reason} (to wait for a server that is still starting, use --wait-ready SECONDS)"
    return f"{reason} (still not ready after {wait_s:g} s of --wait-ready, {attempts} attempts)"


async def _attempt(
    backend: Backend,
    model: str | None,
    mix: tuple[str, ...] = (),
    rows: RowModels | None = None,
) -> ServedModel:
    try:
        models = await backend.served_models()
    except ModelsStatus as error:
        if error.status in NO_MODELS_ROUTE:
            if model is not None:
                return ServedModel(model)  # the server answered: it is up, and the model is known
            raise ServerNotReady(
                f"{error}: is this an OpenAI-compatible server? (one that lists no models "
                "there needs the model named with --model)"
            ) from None
        if error.status == 429 and model is not None:
            # Up, and only the listing is rate-limited: the model is known, go on.
            return ServedModel(model)
        if error.status in RETRY_STATUSES:
            raise _NotYet(str(error)) from None
        raise
    except ModelsUnreachable as error:
        raise _NotYet(str(error)) from None
    except NotAModelList:
        if model is not None:
            return ServedModel(model)
        raise
    chosen = _chosen(models, model, mix, backend.settings.display_url)
    if rows is not None:
        # A row naming the run's own model passes as that model did (listed or not).
        problem = unserved_rows(rows, models, backend.settings.display_url, chosen.id)
        if problem is not None:
            raise ServerNotReady(problem)  # not retried, as a mix's model is not
    return chosen


def _chosen(
    models: list[ServedModel], model: str | None, mix: tuple[str, ...], where: str
) -> ServedModel:
    """The model to benchmark once `/v1/models` answered with `models`."""
    if mix:
        return _mix_served(models, model or mix[0], mix, where)
    if model is not None:
        # The window of the model as listed; a model the server does not list has none known.
        listed = listed_as(model, models)
        return ServedModel(model) if listed is None else replace(listed, id=model)
    if not models:
        raise _NotYet(f"{where} returned no models")
    return models[0]


def _mix_served(
    models: list[ServedModel], model: str, mix: tuple[str, ...], where: str
) -> ServedModel:
    """`model`, the first of a mix whose models must all be listed (`ServerNotReady` naming
    what the server serves when one is not), with the narrowest window they name."""
    problem = unserved(mix, models, where)
    if problem is not None:
        # Not retried: a server that answers its listing has loaded what it serves (vLLM lists
        # its `--lora-modules` adapters as soon as it answers).
        raise ServerNotReady(problem)
    return narrowest(model, [served for name in mix if (served := listed_as(name, models))])


def narrowest(model: str, mixed: list[ServedModel]) -> ServedModel:
    """`model` (a mix's first) with the smallest context window its mix's models name: a
    request of the mix may go to any of them.

    >>> narrowest("a", [ServedModel("a", 8192), ServedModel("b", 4096), ServedModel("c")])
    ServedModel(id='a', context_window=4096, window_problem=None)
    """
    windows = [served.context_window for served in mixed if served.context_window is not None]
    problems = [served.window_problem for served in mixed if served.window_problem is not None]
    return ServedModel(
        model, min(windows, default=None), None if windows else next(iter(problems), None)
    )


async def until_interrupted(work: Awaitable[_T], interrupted: Callable[[], bool]) -> _T:
    """`work`'s result; raises `Interrupted` (with `work` cancelled) once `interrupted()`.

    Ctrl-C is a flag during start-up (see `sigint_as_flag`), so a wait must look at it: the
    request itself may take up to the first-token deadline.
    """
    task = asyncio.ensure_future(work)
    try:
        while not interrupted():
            done, _ = await asyncio.wait({task}, timeout=_INTERRUPT_POLL_S)
            if done:
                return task.result()
        raise Interrupted
    finally:
        if not task.done():
            task.cancel()
            # Waits for the cancellation to finish without raising its CancelledError.
            await asyncio.wait({task})
