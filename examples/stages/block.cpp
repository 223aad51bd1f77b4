// Registers the pre-norm transformer block of block.h as the stage `block`:
//
//   schedc run examples/stages/block.sched --stage-source examples/stages/block.cpp --check
//
// (block.sched says `runtime { stage = block ... }`; `--stage block` does the same for any spec.)

#include "block.h"

SCHEDRT_REGISTER_STAGE(
    block, .description = "pre-norm transformer block (LN, causal attention, LN, MLP 4d + SiLU); fp64, fp32",
    .has_reference = true, .memory = schedrt::StageMemory::Host, .make = block_example::make_block);
