/** Failure types shared by activities (which raise them) and workflows (which react to them). */
export const SUPERSEDED = "Superseded";
export const EXTRACTION_FAILED = "ExtractionFailed";
