import { describe, expect, it } from "vitest";
import { int8DotProduct } from "../../pipeline/cpu-features.ts";
import { resolveQueryPrecision } from "../../pipeline/embedder/index.ts";

// The first lines of /proc/cpuinfo as the kernel prints them: an AVX2-only AMD EPYC (Zen 3), the same with
// Zen 4's AVX-512 VNNI, and an Arm Neoverse core with dot products.
const zen3 =
  "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2 sha_ni vaes vpclmulqdq rdpid fsrm\n";
const zen4 = zen3.replace("fsrm", "fsrm avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16");
const neoverse =
  "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp\n";

describe("int8 dot products of the CPU", () => {
  it("tells AVX2-only x86 from VNNI and Arm dot products, from /proc/cpuinfo's own lines", () => {
    expect(int8DotProduct(zen3)).toMatchObject({ fast: false });
    expect(int8DotProduct(zen4)).toEqual({ fast: true, evidence: "the CPU has avx512_vnni" });
    expect(int8DotProduct(neoverse)).toEqual({ fast: true, evidence: "the CPU has asimddp" });
    expect(int8DotProduct("processor\t: 0\n").fast).toBeUndefined();
    // This machine's own answer is one of the three.
    expect([true, false, undefined]).toContain(int8DotProduct().fast);
  });

  it("embeds bge-small queries in fp32 where int8 is slow, int8-smooth where it is fast, int8-block when unknown", () => {
    expect(resolveQueryPrecision("bge-small", int8DotProduct(zen3))).toMatchObject({
      precision: "fp32",
      preferred: true,
    });
    expect(resolveQueryPrecision("bge-small", int8DotProduct(zen3)).reason).toMatch(
      /avx512_vnni.*slower than fp32/,
    );
    // setup.mjs --test makes both int8 models, so a CPU with dot products gets int8-smooth, on x86 or Arm.
    for (const cpu of [zen4, neoverse]) {
      const chosen = resolveQueryPrecision("bge-small", int8DotProduct(cpu));
      expect(chosen).toMatchObject({ precision: "int8-smooth", preferred: true });
      expect(chosen.reason).toMatch(/int8-smooth model verified in .*bge-small-en-v1\.5-int8-smooth/);
    }
    // Unknown: int8-smooth's signed weights would lose precision on an x86 CPU without VNNI, so the int8-block
    // model, which is exact there too (only slower).
    expect(resolveQueryPrecision("bge-small", { fast: undefined, evidence: "x" })).toMatchObject({
      precision: "int8-block",
      preferred: true,
    });
    expect(resolveQueryPrecision("use-lite", int8DotProduct(zen4)).precision).toBe("fp32");
  });
});
