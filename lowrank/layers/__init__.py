"""Model building blocks.

attention  multi-head attention whose head size is independent of the width
mla        multi-head latent attention (keys and values from a shared latent, a rotary part)
models     transformer blocks and the language models and classifier built from them
"""
