"""A DCGM exporter scraped beside the server's metrics (`--gpu-metrics URL`): the GPUs' energy.

Its scrapes run on the same interval as the server's, in an observer of their own, and only its
DCGM energy and power series are kept. The first scrape comes before the server's and the last
after it, so the exporter's scrapes bracket the run; a scrape that fails during the run is a
problem in the report (the energy of an interval no scrape brackets is left out), not a crash.
No credential of the target is sent to the exporter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from assay.backend import BackendSettings

# The scrapes verify TLS as the requests do: the system's CAs and the --ca-bundle, or not at all.
from assay.backend.client import _ssl_setting
from assay.backend.redaction import Redactor, request_secrets
from assay.errors import ConfigError
from assay.server_metrics import ServerMetricsObserver, TimedSample
from assay.server_metrics.gpu_energy import NO_DCGM, GpuScrapes, dcgm_only, has_gpu_metrics
from assay.spec.sections import ServerMetrics
from assay.spec.target import mask_url


@contextmanager
def observe_gpus(
    metrics: ServerMetrics, backend: BackendSettings, note: Callable[[str], None]
) -> Iterator[ServerMetricsObserver | None]:
    """An observer of the DCGM exporter at `metrics.gpu_url`, or None when none is named.

    An exporter that does not answer the first scrape, or answers without DCGM energy or power
    samples, is a `ConfigError`: the user named it to have the energy.
    """
    url = metrics.gpu_url
    if url is None:
        yield None
        return
    shown = mask_url(url)
    with ServerMetricsObserver(
        url,
        interval_s=metrics.interval,
        timeout_s=min(5.0, backend.timeouts.connect_s),
        verify_tls=_ssl_setting(backend),
        shown_url=shown,
        metrics_elsewhere=True,
        clean=Redactor(request_secrets(url, {})).clean,
    ) as observer:
        first = observer.scrape_first()
        if first.problem is not None:
            raise ConfigError(f"--gpu-metrics: {first.problem}")
        if not has_gpu_metrics([TimedSample(0, first.samples)]):
            raise ConfigError(f"--gpu-metrics {shown}: {NO_DCGM}")
        note(f"GPU metrics: {shown}, every {metrics.interval:g} s")
        yield observer


def gpu_scrapes(observer: ServerMetricsObserver) -> GpuScrapes:
    """The exporter's scrapes after a last one (taken now): its DCGM samples and problems."""
    observer.scrape_now()
    return GpuScrapes(observer.url, dcgm_only(observer.samples), observer.problems)
