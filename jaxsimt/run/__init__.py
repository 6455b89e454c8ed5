"""Running kernels: `launch` (waves of blocks on the machine, results and stats), its options (`options`) and
argument checks (`validate_args`), the timing model on a launch (`launch_timing`), batches and sweeps
(`batch`), sharding over devices (`shard`), the persistent compile cache, progress bars, the per-instruction
report and the command-line launch plumbing (`command`)."""
