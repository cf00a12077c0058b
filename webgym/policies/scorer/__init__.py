"""The set-of-marks action scorer: a small policy that learns on 2 CPU cores in minutes.

Each step it lists what it may do (`candidates`), scores every candidate with a small MLP over
MiniLM embeddings of the task, the candidate, the page (title and path) and its last actions,
their products with the candidate, plus a few scalar features (kind, word overlap with the task,
repetition) (`features`, `embeddings`, `network`), and takes the softmax's choice (`policy`):
sampled at a temperature in training rollouts, the best one in evaluation. A fill then chooses,
per text field, which task phrase to type (or to keep the field's value) with a second, smaller MLP.

The recorded response is the chosen candidate's key and description, and the executed calls go
to the steps table with the page's elements and text, so training (webgym/train/scorer.py)
rebuilds each decision exactly. A checkpoint (`checkpoint`) is a directory: config.json and
model.safetensors; its id is the policy's version.
"""
