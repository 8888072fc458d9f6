"""Claims of the two papers that no chapter tests, each with what testing it would take.

Chapter 08 lists them beside the judged claims so that "not tested" is never confused with
"forgotten". Each is filed under the chapter whose question it belongs to. The claims come from
the paper notes (``shared/papers``): Bhojanapalli et al.'s tables and figures at BERT and LM1B
scale, and Min & Li's statements that the reviews quote but whose full text is not available.
"""
from __future__ import annotations

from .verdicts import BHOJANAPALLI, MIN_LI, SIMULATION, TRAINING, Claim

__all__ = ["UNTESTED"]

# Hardware figures are the papers' own (Appendix C of Bhojanapalli et al.): BERT pre-training took
# 2-3 days on 16 TPUv3 chips per model, LM1B runs "a couple of hours" on 4 TPUv2 chips.
UNTESTED: tuple[Claim, ...] = (
    Claim("bert-large-more-heads-hurt", BHOJANAPALLI, "04", "",
          "BERT-large (d = 1024, n = 128) gets worse on SQuAD and MNLI as the number of heads grows past 8, "
          "as the h > d/n bottleneck predicts", None, kind=TRAINING, where="Sec. 2.3; Table 1",
          untested="three BERT-large pre-trainings (h = 8, 16, 32; 24 layers, 450k + 50k steps) and fine-tuning "
                   "with several seeds: about 2-3 days each on 16-64 TPUv3 chips, Wikipedia + BooksCorpus; the "
                   "reported differences (0.44 F1 from 8 to 32 heads) need the fine-tuning spread measured"),
    Claim("bert-fixed-head-beats-large", BHOJANAPALLI, "04", "",
          "A fixed head size (d_p = 128) at width 512 beats BERT-large at about the same parameter count "
          "(SQuAD F1/EM, MNLI)", None, kind=TRAINING, where="Fig. 2; Table 2(A)",
          untested="BERT pre-training at d = 512 with h = 8 to 32 fixed heads against BERT-large, each 2-3 days on "
                   "16-64 TPUv3 chips; chapter 04's parameter-matched row is the small-scale analogue"),
    Claim("bert-d768-more-heads", BHOJANAPALLI, "04", "",
          "At width 768 with d_p = 128, more heads (8 to 20) improve SQuAD and MNLI", None, kind=TRAINING,
          where="Table 3 (Appendix D)",
          untested="four BERT pre-trainings at d = 768 (2-3 days each on 16 TPUv3 chips); chapter 04's Fig. 3a "
                   "fixed half asks the same question at small scale"),
    Claim("lm1b-scaling", BHOJANAPALLI, "04", "",
          "On LM1B, fixed head size models at width 256 beat baselines at width 512 and scale better with "
          "parameters", None, kind=TRAINING, where="Fig. 1; Sec. 4.2",
          untested="6-layer LM1B models, batch 4096, 250k steps, h from 4 to 70 (4 TPUv2 chips, a couple of hours "
                   "each) and the LM1B corpus; chapter 04 tests the parameter-matched comparison on a small "
                   "corpus instead"),
    Claim("minli-lemma1", MIN_LI, "05", "",
          "Lemma 1: the gap between hardmax and softmax attention is bounded", None, kind=SIMULATION,
          where="Lemma 1 (R26 Reviewer 4)",
          untested="the lemma's statement, which the available sources do not give; with it, a check of the bound "
                   "against chapter 05's temperature sweep takes minutes"),
    Claim("minli-multihead-068", MIN_LI, "05", "",
          "A multi-head variant reaches rank about 0.68 n for d_h < 5, above 0.63 n", None, kind=SIMULATION,
          where="Fig. 4(b) (R25 Reviewer 2)",
          untested="the variant's definition, which the available sources do not give; chapter 05's sampler can "
                   "run any concrete multi-head construction in minutes"),
)
