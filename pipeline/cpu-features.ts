// Whether this CPU multiplies int8 numbers fast, read from the kernel's /proc/cpuinfo. Both int8 query models
// compute in int8: int8-block (MatMulNBits, accuracy_level 4) and int8-smooth (onnxruntime's integer GEMM with
// signed weights). onnxruntime's kernels for them are fast, and for signed weights exact, only with a dot-product
// instruction for int8 (x86 VNNI or AMX, Arm's dot product). Without one (an AVX2-only x86 server) int8-block is
// slower than the fp32 model and signed weights' products saturate, so fp32 is chosen there
// (docs/decisions/README.md#0003-query-weights-by-cpu).

import { readFileSync } from "node:fs";

export interface Int8DotProduct {
  /** True or false when /proc/cpuinfo says; undefined when it cannot be read (not Linux) or names no flags. */
  fast: boolean | undefined;
  /** What the answer rests on, for the start-up log. */
  evidence: string;
}

/** x86 flags (the `flags` line) and Arm features (the `Features` line) that give int8 dot products. */
const INT8_DOT_FLAGS = ["avx512_vnni", "avx_vnni", "amx_int8", "asimddp"];

/** Reads /proc/cpuinfo (or the text given, for tests) once per call; the callers ask once at start-up. */
export function int8DotProduct(cpuinfo?: string): Int8DotProduct {
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/cpuinfo", "utf8");
    } catch {
      return { fast: undefined, evidence: "/proc/cpuinfo cannot be read" };
    }
  }
  // Every core reports the same flags: the first core's line is enough.
  const line = text.split("\n").find((l) => /^(flags|Features)\s*:/.test(l));
  if (!line) return { fast: undefined, evidence: "/proc/cpuinfo names no CPU flags" };
  const flags = new Set(
    line
      .slice(line.indexOf(":") + 1)
      .trim()
      .split(/\s+/),
  );
  const found = INT8_DOT_FLAGS.filter((f) => flags.has(f));
  if (found.length) return { fast: true, evidence: `the CPU has ${found.join(", ")}` };
  return { fast: false, evidence: `the CPU has none of ${INT8_DOT_FLAGS.join(", ")}` };
}
