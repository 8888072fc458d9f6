"""Reading attention out of models.

probe      pre-softmax logits and probabilities per layer and head, and their ranks
hf         the same out of Hugging Face models, through their attention-function registry
logit_cut  every head's logits cut to rank r while a rotary model runs
report     the outputs of ``lowrank probe``: tables, figures, a one-page report
run        ``lowrank probe``: a checkpoint in, a folder of outputs out
"""
