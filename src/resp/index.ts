export { encodeCommand, encodedLength } from './encoder.js';
export { RespDecoder, DEFAULT_MAX_REPLY_BYTES, type DecoderOptions, type DecodedValue } from './decoder.js';
