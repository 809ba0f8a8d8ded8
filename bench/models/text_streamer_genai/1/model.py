"""text_streamer for genai-perf: the same tokenizer and per-token work, with the token's text out.

genai-perf counts output tokens by tokenizing the text of a request's responses together, so each
response carries its WordPiece piece as text: a word's first piece with a leading space, its
continuations ("##ing") without, which the same vocabulary tokenizes back into the same pieces.
"""

import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_streamer_model import MAX_TOKENS, TritonPythonModel as _TextStreamer, _basic_tokenize  # noqa: E402


class TritonPythonModel(_TextStreamer):
    def _stream(self, request):
        sender = request.get_response_sender()
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        texts = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)
        limit = pb_utils.get_input_tensor_by_name(request, "max_tokens")
        limit = min(MAX_TOKENS, int(limit.as_numpy().reshape(-1)[0])) if limit is not None else MAX_TOKENS
        text = texts[0].decode("utf-8", errors="replace") if isinstance(texts[0], bytes) else str(texts[0])
        words = _basic_tokenize(text)
        if texts.size != 1 or not words:
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                "text_input must hold one string with words", pb_utils.TritonError.INVALID_ARG)), flags=final)
            return
        context = np.zeros(self.mix.shape[0], dtype=np.float32)
        sent = 0
        for word in words:
            for piece, _ in self._wordpiece(word):
                if sent >= limit:
                    break
                v = self._embed(piece)
                context = 0.8 * context + v
                out = piece[2:] if piece.startswith("##") else " " + piece
                sender.send(pb_utils.InferenceResponse(output_tensors=[
                    pb_utils.Tensor("text_output", np.array([out.encode("utf-8")], dtype=np.object_)),
                ]))
                sent += 1
        sender.send(flags=final)

    def execute(self, requests):
        # text_streamer's: each request streamed through its response sender.
        return super().execute(requests)
