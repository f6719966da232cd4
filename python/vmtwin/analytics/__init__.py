"""Operations analytics: anomaly events and the AECE correlation engine.

AECE (Marvasti, Poghosyan, Harutyunyan, Grigoryan, "An Anomaly Event Correlation Engine",
VMware Technical Journal 2013) learns, from the anomaly events of a training period, which events
tend to follow which, and ranks the currently active events by how much they explain the rest:
root causes, bottlenecks and black swans. The modules, in pipeline order:

- :mod:`~vmtwin.analytics.inputs`: metric series (long or wide CSV/Parquet, results folders);
- :mod:`~vmtwin.analytics.thresholds`: dynamic thresholds (seasonal quantile bands, robust bands)
  and the anomaly events they open;
- :mod:`~vmtwin.analytics.events`: the event model and event-list files;
- :mod:`~vmtwin.analytics.lifetimes`: log-normal lifetimes and t_alpha;
- :mod:`~vmtwin.analytics.cooccurrence`: priors, joints, conditionals, precedence;
- :mod:`~vmtwin.analytics.graph`: mutual-information reduction and components;
- :mod:`~vmtwin.analytics.impact`, :mod:`~vmtwin.analytics.recommend`: impact factors, lists,
  RRI/LRR, active mode, bottlenecks;
- :mod:`~vmtwin.analytics.critical`: critical nodes, roots, paths, sectors, black swans;
- :mod:`~vmtwin.analytics.engine`: the whole pipeline (:func:`fit`, :class:`Model`);
- :mod:`~vmtwin.analytics.synthetic`, :mod:`~vmtwin.analytics.evaluate`: ground-truth data and
  hit rates.

docs/analytics.md is the user guide and lists every reconstructed formula with its alternatives.
"""

from vmtwin.analytics.engine import AeceParams, Model, fit
from vmtwin.analytics.events import Event, EventType

__all__ = ["AeceParams", "Event", "EventType", "Model", "fit"]
