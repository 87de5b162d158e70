"""Plausible wrong answers to assignment 03a (gradient similarity); see tests/wrong/README.md."""
WRONG = [
    dict(cell="cosine",
         loses=["check-cosine", "check-mean-pairwise"],
         why="not divided by |b|",
         code='''
def cosine(a, b):
    # wrong: not divided by |b|
    return float(np.dot(a, b) / np.linalg.norm(a))
'''),
    dict(cell="cosine",
         loses=["check-cosine", "check-mean-pairwise"],
         why="the dot product without any norm",
         code='''
def cosine(a, b):
    return float(np.dot(a, b))
'''),
    dict(cell="worker-gradients",
         loses=["check-worker-gradients"],
         why="ignores the seed: always the shards of seed 0",
         code='''
def worker_gradients(problem, workers, partition, params, seed=0):
    return [problem.gradient(params, shard) for shard in problem.shards(workers, partition, 0)]
'''),
    dict(cell="mean-pairwise",
         loses=["check-mean-pairwise"],
         why="includes each gradient's cosine with itself",
         code='''
def mean_pairwise_similarity(grads):
    pairs = [cosine(grads[i], grads[j]) for i in range(len(grads)) for j in range(i, len(grads))]
    return float(np.mean(pairs))
'''),
    dict(cell="supports-a",
         loses=["check-supports-a"],
         why="decides from the partition's name, not from the numbers",
         code='''
def supports_a(iid_similarity, non_iid_similarity):
    return {"iid": True, "non_iid": False}
'''),
    dict(cell="supports-a",
         loses=["check-supports-a"],
         why="strictly above 0.5: 0.5 itself does not count",
         code='''
def supports_a(iid_similarity, non_iid_similarity):
    return {"iid": bool(iid_similarity > 0.5), "non_iid": bool(non_iid_similarity > 0.5)}
'''),
    dict(cell="predict-mlp",
         loses=["check-predict-mlp"],
         why="assumes that gradients of one model are always similar",
         code='''
predicted_mlp = {"iid": "above", "by_label": "above"}
'''),
    dict(cell="batch-size",
         loses=["check-batch-size"],
         why="the largest batch: the most similar gradients, but far too slow",
         code='''
chosen_batch_size = 512
'''),
    dict(cell="batch-size",
         loses=["check-batch-size"],
         why="the cheapest batch: one example per gradient is too noisy to get there",
         code='''
chosen_batch_size = 1
'''),
]
