"""Makes the int8-smooth query model from the verified bge-small-en-v1.5 ONNX export (run by scripts/setup.mjs).

    python quantize-query-model-smooth.py <fp32 model.onnx> <output model.onnx>

First the committed per-channel scales (scripts/query-smoothing.json, from scripts/calibrate-query-smoothing.py)
are applied: the input of each MatMul with a weight matrix is multiplied by 1/s (one Mul per shared input) and
the weight's rows by s, so the product is unchanged, but the activations' outlier channels move into the weights.
Then onnxruntime's dynamic quantiser makes every such MatMul int8: weights signed, per output channel; the
activations are quantised at run time over the whole input tensor. So a text's vector depends on the texts of
its batch: queries run one per call. Signed weights need an int8 dot-product instruction (VNNI, AMX, Arm's dot
product) to be exact: without one onnxruntime's x86 kernel saturates their products (the service chooses this
model only where the CPU has one). The result is byte for byte the same for the same inputs and package versions;
setup checks its sha256 against the pin (docs/models.md).
"""

import hashlib
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

SMOOTHING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "query-smoothing.json")


def smooth(model, exponents):
    weights = {i.name: i for i in model.graph.initializer}
    readers = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and node.input[0] in exponents:
            readers.setdefault(node.input[0], []).append(node)
    if set(readers) != set(exponents):
        sys.exit("query-smoothing.json does not name this model's MatMul inputs")
    muls = {}
    for name, nodes in readers.items():
        # 2^e in float32 is exact, and so are x * 2^-e and w * 2^e (barring under- or overflow).
        scale = np.exp2(np.array(exponents[name], dtype=np.float32))
        for node in nodes:
            w = numpy_helper.to_array(weights[node.input[1]])
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(w * scale[:, None], node.input[1]))
            node.input[0] = f"{name}/smoothed"
        model.graph.initializer.append(numpy_helper.from_array(1 / scale, f"{name}/smoothing"))
        muls[name] = helper.make_node("Mul", [name, f"{name}/smoothing"], [f"{name}/smoothed"], name=f"{name}/smooth")
    # Each Mul goes right before the first node that reads its output, which keeps the graph in topological order.
    ordered = []
    for node in model.graph.node:
        for name in [i[: -len("/smoothed")] for i in node.input if i.endswith("/smoothed")]:
            if name in muls:
                ordered.append(muls.pop(name))
        ordered.append(node)
    del model.graph.node[:]
    model.graph.node.extend(ordered)


def main(source, target):
    with open(SMOOTHING, encoding="utf8") as f:
        smoothing = json.load(f)
    with open(source, "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != smoothing["model_sha256"]:
            sys.exit("query-smoothing.json was calibrated on another model file")
    model = onnx.load(source)
    smooth(model, smoothing["exponents"])
    with tempfile.TemporaryDirectory() as scratch:
        smoothed = os.path.join(scratch, "smoothed.onnx")
        onnx.save(model, smoothed)
        quantize_dynamic(smoothed, target, per_channel=True, weight_type=QuantType.QInt8)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: quantize-query-model-smooth.py <fp32 model.onnx> <output model.onnx>")
    main(sys.argv[1], sys.argv[2])
