#!/usr/bin/env bash
# On the device: move carried chunks (vLLM's c_NN, the harness's h_NN) out of the working tree.
mkdir -p $HOME/stash
for f in .gpu/chunks/c_* .gpu/chunks/h_*; do [ -f "$f" ] && mv "$f" $HOME/stash/; done
ls $HOME/stash | tr '\n' ' '; echo; df -h /root | tail -1
