"""Applications built on launches: the GEMM ladder (`ladder`), tile sweeps, validation against the H200
(`validate`, `fixtures`), the conformance suite (`conformance`), the HTML report, address capture, the timing
model's calibration (`calibrate`), the PTX fuzzer (`ptx_fuzz`) and the demo."""
