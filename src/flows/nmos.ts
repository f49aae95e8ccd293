/**
 * The field names of NMOS IS-04 flows (AMWA-TV/is-04, APIs/schemas/): resource_core.json,
 * flow_core.json, flow_video.json, flow_video_raw.json, flow_video_coded.json, flow_audio.json,
 * flow_audio_raw.json, flow_audio_coded.json, flow_data.json, flow_json_data.json,
 * flow_sdianc_data.json and flow_mux.json; plus `channel_count`, which MXL's FlowParser.cpp adds
 * for audio. A flow file key outside these that is a near miss of one is a typo
 * (Fields.rejectNearMisses); any other key is an extension and stays accepted.
 */
export const NMOS_FLOW_FIELDS: readonly string[] = [
  // resource_core.json
  'id', 'version', 'label', 'description', 'tags',
  // flow_core.json
  'source_id', 'device_id', 'parents', 'grain_rate',
  // flow_video.json (+ _raw, _coded), flow_audio.json (+ _raw, _coded), flow_data.json,
  // flow_json_data.json, flow_sdianc_data.json, flow_mux.json
  'format', 'media_type', 'frame_width', 'frame_height', 'interlace_mode', 'colorspace', 'transfer_characteristic',
  'components', 'sample_rate', 'bit_depth', 'event_type', 'DID_SDID',
  // MXL (FlowParser.cpp)
  'channel_count',
];

/** grain_rate and sample_rate (flow_core.json, flow_audio.json). */
export const NMOS_RATE_FIELDS: readonly string[] = ['numerator', 'denominator'];
/** Items of components (flow_video_raw.json). */
export const NMOS_COMPONENT_FIELDS: readonly string[] = ['name', 'width', 'height', 'bit_depth'];
/** Items of DID_SDID (flow_sdianc_data.json). */
export const NMOS_DID_SDID_FIELDS: readonly string[] = ['DID', 'SDID'];
