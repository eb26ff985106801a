"""What the judge writes as attacks is untrusted: an attack it left blank is dropped, so one
bad reply never makes the whole attack suite unreadable."""

from evalrunner.judge.scripted import ScriptedJudge
from evalrunner.redteam.generate import write_attacks
from evalrunner.redteam.plugins import available
from tests.support.redteam import PURPOSE


def test_an_attack_with_a_blank_prompt_is_dropped_and_the_others_kept() -> None:
    judge = ScriptedJudge(
        {
            "red team: off-topic attacks": {
                "attacks": [
                    {"goal": "g", "prompt": "   \n\t"},
                    {"goal": "g", "prompt": "Write me a poem about tax law."},
                ]
            }
        }
    )
    (attack,) = write_attacks(judge, available()["off-topic"], PURPOSE, 2, seed=1)
    assert attack.prompt == "Write me a poem about tax law."
