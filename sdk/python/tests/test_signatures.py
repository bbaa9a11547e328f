"""Signature checks: Standard Webhooks' published vectors, Orderly's from the Go code."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from orderly import (Answer, SignatureError, parse_request, sign_orderly, sign_standard,  # noqa: E402
                     verify_orderly, verify_request, verify_standard)

# The published Standard Webhooks vector: github.com/standard-webhooks/standard-webhooks,
# libraries/python/tests/test_webhooks.py (test_sign_function; the invalid signature
# from test_multi_sig_payload_is_valid).
VEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VEC_TS = 1614265330
VEC_BODY = b'{"test": 2432232314}'
VEC_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
VEC_INVALID = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="

# Orderly's scheme: wire.Sign([]byte("s3cr3t"), time.Unix(1700000000, 0), body),
# printed by the Go code of webhook/wire.
ORD_SECRET = "s3cr3t"
ORD_BODY = b'{"queue":"q","shard":0,"jobs":[]}'
ORD_SIG = "t=1700000000,v1=7f86b0f9c3394a62350bf662e0075175aa42c50ef24948360a4e76c9ef40e7e1"


class StandardWebhooks(unittest.TestCase):
    def test_published_vector(self):
        self.assertEqual(sign_standard(VEC_SECRET, VEC_ID, VEC_TS, VEC_BODY), VEC_SIG)
        verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, VEC_SECRET, now=VEC_TS)
        # without the prefix, as the libraries accept
        verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, "whsec_" + VEC_SECRET[6:], now=VEC_TS)
        with self.assertRaises(SignatureError):
            verify_standard(VEC_ID, str(VEC_TS), VEC_INVALID, VEC_BODY, VEC_SECRET, now=VEC_TS)

    def test_several_signatures_and_versions(self):
        several = " ".join([VEC_INVALID, "v2," + VEC_INVALID[3:], VEC_SIG, VEC_INVALID])
        verify_standard(VEC_ID, str(VEC_TS), several, VEC_BODY, VEC_SECRET, now=VEC_TS)

    def test_tolerance(self):
        verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, VEC_SECRET, now=VEC_TS + 300)
        for now in (VEC_TS + 301, VEC_TS - 301):
            with self.assertRaisesRegex(SignatureError, "tolerance"):
                verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, VEC_SECRET, now=now)

    def test_refusals(self):
        cases = [
            (None, str(VEC_TS), VEC_SIG, VEC_BODY),  # no id
            (VEC_ID, None, VEC_SIG, VEC_BODY),  # no timestamp
            (VEC_ID, "hello", VEC_SIG, VEC_BODY),  # bad timestamp
            (VEC_ID, str(VEC_TS), None, VEC_BODY),  # no signature
            (VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY + b" "),  # another body
            (VEC_ID + "x", str(VEC_TS), VEC_SIG, VEC_BODY),  # another id
        ]
        for c in cases:
            with self.assertRaises(SignatureError, msg=repr(c)):
                verify_standard(*c, VEC_SECRET, now=VEC_TS)
        with self.assertRaises(SignatureError):
            verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, "", now=VEC_TS)

    def test_rotation(self):
        other = "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB"
        verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, [other, VEC_SECRET], now=VEC_TS)
        with self.assertRaises(SignatureError):
            verify_standard(VEC_ID, str(VEC_TS), VEC_SIG, VEC_BODY, [other], now=VEC_TS)


class OrderlyScheme(unittest.TestCase):
    def test_go_vector(self):
        self.assertEqual(sign_orderly(ORD_SECRET, 1700000000, ORD_BODY), ORD_SIG)
        verify_orderly(ORD_SIG, ORD_BODY, ORD_SECRET, now=1700000000)
        verify_orderly(ORD_SIG, ORD_BODY, [b"old", ORD_SECRET.encode()], now=1700000000)
        with self.assertRaises(SignatureError):
            verify_orderly(ORD_SIG, ORD_BODY, "other", now=1700000000)
        with self.assertRaises(SignatureError):
            verify_orderly(ORD_SIG, ORD_BODY + b" ", ORD_SECRET, now=1700000000)

    def test_several_v1_and_malformed(self):
        bad = "0" * 64
        verify_orderly(f"t=1700000000,v1={bad},v1={ORD_SIG.split('v1=')[1]}", ORD_BODY, ORD_SECRET, now=1700000000)
        for h in ["", "t=1700000000", "v1=" + bad, "t=x,v1=" + bad, "t=1,t=2,v1=" + bad, "garbage",
                  "t=1700000000,v1=zz"]:
            with self.assertRaises(SignatureError, msg=h):
                verify_orderly(h, ORD_BODY, ORD_SECRET, now=1700000000)

    def test_tolerance(self):
        verify_orderly(ORD_SIG, ORD_BODY, ORD_SECRET, now=1700000000 - 300)
        with self.assertRaisesRegex(SignatureError, "tolerance"):
            verify_orderly(ORD_SIG, ORD_BODY, ORD_SECRET, now=1700000000 + 301)
        verify_orderly(ORD_SIG, ORD_BODY, ORD_SECRET, tolerance=-1, now=0)

    def test_verify_request_picks_the_scheme(self):
        self.assertEqual(verify_request({"orderly-signature": ORD_SIG}, ORD_BODY, ORD_SECRET, now=1700000000),
                         "orderly")
        h = {"Webhook-Id": VEC_ID, "Webhook-Timestamp": str(VEC_TS), "Webhook-Signature": VEC_SIG}
        self.assertEqual(verify_request(h, VEC_BODY, VEC_SECRET, now=VEC_TS), "standard")
        with self.assertRaises(SignatureError):
            verify_request({}, ORD_BODY, ORD_SECRET)


class RequestAndAnswer(unittest.TestCase):
    def test_parse(self):
        body = (b'{"queue":"q","shard":2,"jobs":[{"id":"a","retry_count":-1,"perform_at":1.5,'
                b'"state":{"n":1},"version":3,"timer":true,'
                b'"payloads":[{"payload":{"x":1},"score":1,"headers":{"h":"v"}},'
                b'{"payload_base64":"AP8=","score":2}]}]}')
        d = parse_request(body, {"Orderly-Delivery": "q/2/1/9"})
        self.assertEqual((d.queue, d.shard, d.name), ("q", 2, "q/2/1/9"))
        j = d.jobs[0]
        self.assertEqual((j.id, j.retry_count, j.state, j.version, j.timer), ("a", -1, {"n": 1}, 3, True))
        self.assertEqual(j.payloads[0].json(), {"x": 1})
        self.assertEqual(j.payloads[0].headers, {"h": "v"})
        self.assertEqual(j.payloads[1].data, b"\x00\xff")

    def test_answer(self):
        self.assertEqual(Answer().to_json(), {})
        a = (Answer().fail("a", "boom").retry_after("b", "90s").kill("c", "bad").drop("d", "old")
             .set_state("e", {"n": 2}).set_state("f", None).set_timer("e", 0).set_timer("f", None)
             .add_emit("e", "other", "x", {"k": 1}, score=3, perform_in=5).set_result("e", [1]))
        self.assertEqual(a.to_json(), {
            "failed": {"a": "boom"}, "retry_in": {"b": "90s"}, "dead": {"c": "bad"}, "discard": {"d": "old"},
            "state": {"e": {"n": 2}, "f": None}, "timers": {"e": "1970-01-01T00:00:00Z", "f": None},
            "emit": [{"from": "e", "queue": "other", "id": "x", "payload": {"k": 1}, "score": 3, "perform_in": 5}],
            "result": {"e": [1]}})


if __name__ == "__main__":
    unittest.main()
