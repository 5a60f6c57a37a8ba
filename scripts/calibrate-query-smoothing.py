"""Calibrates the int8-smooth query model's per-channel scales (a developer's tool; setup does not run it).

    python calibrate-query-smoothing.py <fp32 model.onnx> <tokenizer.json> <queries.jsonl> <qrels.tsv> <output.json>

Needs onnxruntime, onnx, numpy and tokenizers. It runs the fp32 model over SciFact's queries that are not judged
in <qrels.tsv> (the held-out test queries stay out of the calibration), records the largest magnitude of each
channel at the input of every MatMul with a weight matrix (the matrices that share an input share its scales),
and writes, for each such input, the exponent e of a power-of-two scale s = 2^e per channel, as SmoothQuant
chooses it: s = amax_x^ALPHA / amax_w^(1 - ALPHA). scripts/quantize-query-model-smooth.py divides the input by s
and multiplies the weights' rows by s (the product is unchanged), which moves the activations' outlier channels
into the weights, where they are quantised per output channel, before the per-tensor dynamic int8 quantisation
of the activations. Powers of two make both multiplications exact, so the result does not depend on rounding.
The output is committed (scripts/query-smoothing.json): setup makes the model from it and the pinned fp32 weights
alone, byte for byte the same on every machine.
"""

import collections
import hashlib
import json
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from tokenizers import Tokenizer

ALPHA = 0.8


def weight_inputs(model):
    """Input tensor name -> names of the weight matrices of the MatMuls that read it."""
    inits = {i.name for i in model.graph.initializer}
    groups = collections.defaultdict(list)
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            groups[node.input[0]].append(node.input[1])
    return groups


def main(model_path, tokenizer_path, queries_path, qrels_path, output_path):
    model = onnx.load(model_path)
    groups = weight_inputs(model)
    judged = {line.split("\t")[0] for line in open(qrels_path, encoding="utf8").read().split("\n")[1:] if line}
    texts = [
        q["text"]
        for q in map(json.loads, open(queries_path, encoding="utf8").read().splitlines())
        if q["_id"] not in judged
    ]
    probe = onnx.load(model_path)
    for name in groups:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    tokenizer = Tokenizer.from_file(tokenizer_path)
    amax = {}
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        for name, value in zip(outputs, session.run(None, feeds)):
            if name in groups:
                peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
                amax[name] = np.maximum(amax[name], peak) if name in amax else peak
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    exponents = {}
    for name, matrices in groups.items():
        wmax = np.max([np.abs(weights[m]).max(axis=1) for m in matrices], axis=0)
        scale = np.maximum(amax[name], 1e-5) ** ALPHA / np.maximum(wmax, 1e-5) ** (1 - ALPHA)
        exponents[name] = [int(e) for e in np.round(np.log2(scale))]
    with open(model_path, "rb") as f:
        source_sha256 = hashlib.sha256(f.read()).hexdigest()
    result = {
        "description": "Power-of-two exponents of the per-channel scales at each MatMul input of bge-small-en-v1.5 "
        "(scripts/calibrate-query-smoothing.py, used by scripts/quantize-query-model-smooth.py)",
        "model_sha256": source_sha256,
        "alpha": ALPHA,
        "calibration": f"{len(texts)} SciFact queries not judged in its test qrels",
        "exponents": exponents,
    }
    with open(output_path, "w", encoding="utf8") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
