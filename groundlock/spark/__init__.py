"""The chain over Spark DataFrames: answer millions of bundles, or re-judge stored answers.

``answer`` runs :func:`~groundlock.grounded_answer_chain` over a DataFrame of bundles (JSON
text) or of questions (with a Delta index to retrieve from), with ``mapInArrow``: each
Python worker builds the chain once, answers its Arrow batches through LangChain's own
``batch`` (``max_concurrency`` model calls in flight, an optional rate limit), and returns
a DataFrame of public responses. With a ``store`` the audit rows go to the Delta trail, and
each batch's rows are committed before the batch leaves the task.

``judge`` re-judges stored answers under a policy with no model (R2, R3 and R5 only): the
policy impact of a new ruleset over a whole history of answers.

Spark comes from the ``spark`` extra (``pip install 'groundlock[spark]'``: pyspark, with
pyarrow and pandas, which its Arrow UDFs need). Delta is read and written by delta-rs in the
workers, never by Spark's JVM (a Delta JVM package would be downloaded at run time).
"""

from groundlock.spark.answering import RESPONSE_SCHEMA, answer
from groundlock.spark.rejudging import VERDICT_SCHEMA, judge
from groundlock.spark.spec import ChainSpec

__all__ = ["RESPONSE_SCHEMA", "VERDICT_SCHEMA", "ChainSpec", "answer", "judge"]
