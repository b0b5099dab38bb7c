"""The parts of FastXML (:class:`mlgp.baselines.FastXML`): the split losses (``loss``), the node
split (``split``), growing one tree (``tree``) and the ensemble's flat arrays, routing and checks
(``forest``). NumPy, SciPy and scikit-learn only; saving is :mod:`mlgp.estimator.persistence`'s.
"""
