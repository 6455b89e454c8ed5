"""The hardware units a warp's instructions use: the ALU and its op semantics (`alu`, `generic`, `ptxops`), the
instruction table (`isa`), the load/store unit and the memory models and their counters (`lsu`, `coalescing`,
`banks`, `memstats`, `memcounts`, the caches `constcache`, `rocache`, `texture`), the reconvergence stack
(`stack`), barriers (`barriers`), register banks (`regbanks`), occupancy (`occupancy`), the Tensor Core's
MMA (`mma`) and the compiler's order for global loads (`loadorder`). Pure functions over a warp's lanes; they
know nothing of the machine that calls them."""
