"""Closed-form and small simulation models of storage contention (Kraft et al. 2013), pure
Python and numpy, usable on simulated runs and on a user's own isolation measurements.

- :mod:`~vmtwin.models.kraft_linear` — the decomposition model's linear predictors (eqs. 14-19);
- :mod:`~vmtwin.models.product_form` — the open product-form baseline (eq. 11) and error (eq. 13);
- :mod:`~vmtwin.models.kraft_sfqd` — the homogeneous trace-driven SFQ(D) simulation with
  splitting, merging (Algorithm 1) and the merge-value search (Algorithm 2);
- :mod:`~vmtwin.models.kraft_decomposition` — the closed batch simulation of read response-time
  distributions (Algorithm 3) and its parameter estimation (eqs. 21-24);
- :mod:`~vmtwin.models.service_sampler` — MAP(2) and block-bootstrap service-time samplers;
- :mod:`~vmtwin.models.isolation` — isolation measurements from CSV (summary or trace);
- :mod:`~vmtwin.models.kraft_rows` — the paper's tables recomputed, published beside computed.
"""
