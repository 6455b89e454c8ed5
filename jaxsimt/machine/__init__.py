"""The machine: the state pytree and the step that runs a wave of blocks (`core`: schedule, execute, memory
stage, terminators and stacks, barriers, counters), the compiled templates of a program's blocks
(`templates`), the memory stage (`memstage`), independent thread scheduling (`its`), the sanitizer's checks
(`sanitizer`) and the diagnosis of a machine that stopped making progress (`stuck`)."""
