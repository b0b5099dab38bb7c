"""GenEML (Jain, Modhe & Rai, 2017): the exposure model for multi-label data with missing labels.

Contract for what lands here: the TFP joint distribution, its conditionals, a Gibbs sampler, batch
EM and online EM, and a GenEML estimator with the scikit-learn contract and the shared scoring
interface (``decision_function``, ``predict_topk`` through :func:`mlgp.scores.score_in_batches`).
It may use TensorFlow, TensorFlow Probability and :mod:`mlgp.distributions`, but never the GP
modules (kernels, inducing, likelihoods, variational, models, training) nor
:mod:`mlgp.baselines`, and they never import it. Empty for now.
"""
