"""The parts of FastXML (:class:`mlgp.baselines.FastXML`): the split losses (``loss``), the node
split (``split``), growing one tree (``tree``), the ensemble's flat arrays and routing
(``forest``) and the ``.npz`` file format (``io``). NumPy, SciPy and scikit-learn only.
"""
