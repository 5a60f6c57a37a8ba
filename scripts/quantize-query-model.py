"""Makes the int8-block query model from the verified bge-small-en-v1.5 ONNX export (run by scripts/setup.mjs).

    python quantize-query-model.py <fp32 model.onnx> <output model.onnx>

Every MatMul with a weight matrix becomes onnxruntime's MatMulNBits: 8-bit symmetric weights in blocks of 64
along the input dimension, computed in int8 (accuracy_level 4), where the activations are quantised per row and
block. So a text's vector does not depend on the other texts of its batch, unlike the dynamic (per tensor)
quantisation of the Xenova int8 export. The result is byte for byte the same for the same inputs and package
versions; setup checks its sha256 against the pin (docs/models.md).
"""

import sys

import onnx
from onnxruntime.quantization.matmul_nbits_quantizer import (
    DefaultWeightOnlyQuantConfig,
    MatMulNBitsQuantizer,
)

BLOCK_SIZE = 64


def main(source: str, target: str) -> None:
    config = DefaultWeightOnlyQuantConfig(
        block_size=BLOCK_SIZE, is_symmetric=True, accuracy_level=4, bits=8
    )
    quantizer = MatMulNBitsQuantizer(onnx.load(source), algo_config=config)
    quantizer.process()
    quantizer.model.save_model_to_file(target, use_external_data_format=False)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: quantize-query-model.py <fp32 model.onnx> <output model.onnx>")
    main(sys.argv[1], sys.argv[2])
