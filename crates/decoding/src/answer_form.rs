//! How a model writes a final answer under a template: slot by slot (each value right after its slot's name,
//! the runtime writing the sentence) or as the template's sentence — both the model's words, the form kept per
//! model by measurement in the model catalogue.

use forge_language::template;

/// How a final answer with a template to fill is written. Both are the model's words under the same grounding;
/// which one a model handles better is measured (`evidence/eval/`) and kept per model in the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnswerForm {
    /// `"slots":{"<name>":"<value>",…}`: each value written right after the slot's name, the sentence written
    /// by the runtime from the template.
    #[default]
    Slots,
    /// `"answer":"<the template's sentence with each slot filled in place>"`: a value is written before the
    /// words after it that say what it is.
    Sentence,
}

impl AnswerForm {
    /// The form the model catalogue keeps for the model at `model_path` (by file name); the default for a
    /// model it does not list.
    pub fn for_model(model_path: &std::path::Path) -> Self {
        let file = model_path.file_name().and_then(|f| f.to_str());
        match forge_model::fetch::catalog()
            .into_iter()
            .find(|spec| Some(spec.file_name().as_str()) == file)
        {
            Some(spec) if !spec.slot_answers => AnswerForm::Sentence,
            _ => AnswerForm::default(),
        }
    }

    /// Whether a final answer under `answer_template` is given slot by slot in this form.
    pub fn by_slots(self, answer_template: &str) -> bool {
        self == AnswerForm::Slots
            && !template::slot_names(&template::parse(answer_template)).is_empty()
    }
}
